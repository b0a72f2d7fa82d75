/**
 * Pagination cursors: opaque to clients (base64url of the sort key of the last item served).
 */
import { Buffer } from 'node:buffer';
import { GatewayError } from '@gatehouse-mcp/gateway';

export function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The sort key in a cursor, or a 400 when the text is not a cursor of `size` parts. */
export function decodeCursor(cursor: string, size: number): string[] {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = null;
  }
  if (!Array.isArray(key) || key.length !== size || !key.every((part) => typeof part === 'string' && !part.includes('\u0000'))) {
    throw new GatewayError('invalid_request', 'cursor is not valid: pass the metadata.nextCursor value of the previous page unchanged');
  }
  return key as string[];
}

/** Numbered placeholders for a statement built from optional conditions (values never enter the text). */
export class Params {
  readonly values: unknown[] = [];

  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}
