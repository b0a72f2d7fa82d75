/**
 * Sizes as the resources write them: integer bytes (`4194304`) or an integer with a binary
 * suffix, as Kubernetes quantities do: `512Ki`, `4Mi`, `1Gi`. Values are bytes.
 */
import { z } from 'zod';
import { describeValue } from './problems.ts';

/** For messages: what a size looks like. */
const SIZE_FORMS = 'an integer number of bytes, or an integer with Ki, Mi or Gi (for example 512Ki, 4Mi, 1Gi)';

const MULTIPLIER: Readonly<Record<string, number>> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

const SIZE = /^(\d+)(Ki|Mi|Gi)?$/;

/** Bytes of a size (`4Mi`, `512Ki`, `1048576`), or null when the value is not one. */
export function parseSize(value: string | number): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const match = SIZE.exec(value);
  if (match === null) return null;
  const bytes = Number(match[1]) * (MULTIPLIER[match[2] ?? ''] ?? Number.NaN);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** A zod schema for a size field: the text or number in, bytes (more than zero) out. */
export const sizeSchema = z.unknown().transform((value, ctx) => {
  const bytes = typeof value === 'string' || typeof value === 'number' ? parseSize(value) : null;
  if (bytes !== null && bytes > 0) return bytes;
  ctx.issues.push({ code: 'custom', input: value, message: `${describeValue(value)} is not a size: use ${SIZE_FORMS}` });
  return z.NEVER;
});

/** A size as a person reads it: `32 MiB`, `512 KiB`, `1000 bytes` (the largest unit it is a whole number of). */
export function formatSize(bytes: number): string {
  for (const unit of ['Gi', 'Mi', 'Ki'] as const) {
    const multiplier = MULTIPLIER[unit]!;
    if (bytes >= multiplier && bytes % multiplier === 0) return `${bytes / multiplier} ${unit}B`;
  }
  return `${bytes} bytes`;
}
