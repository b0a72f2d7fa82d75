/**
 * Multi-document YAML with positions: each document's plain value, plus a way to find the line
 * and column of any path inside it, so that a problem points at the text the user wrote.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments } from 'yaml';
import type { Document, Node, Pair, YAMLError } from 'yaml';
import type { PathSegment } from './problems.ts';
import { scalarSourceOffsets, type ScalarStyle } from './scalar-source.ts';

export interface Position {
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

/** What a position refers to: the value at the path, or the key that names it (unknown fields). */
export type LocateTarget = 'value' | 'key';

export interface YamlDocument {
  /** 1-based number of the document in the file. */
  readonly number: number;
  /** The document as plain data (mappings are objects, sequences arrays). */
  readonly value: unknown;
  /** True when the document has syntax errors: its value is a best-effort recovery. */
  readonly broken: boolean;
  /** Position of the node at `path`; the nearest enclosing field when the path does not exist. */
  locate(path: readonly PathSegment[], target?: LocateTarget): Position;
  /**
   * Position of the character at `offset` (UTF-16 code units; the value's length: just past its
   * end) of the string value at `path`, in the file: where a problem found inside the value (a
   * policy's syntax error) was written. Null when there is no string scalar at `path`, or its
   * source cannot be mapped (scalar-source.ts).
   */
  locateInside(path: readonly PathSegment[], offset: number): Position | null;
}

export interface YamlSyntaxError {
  readonly document: number;
  readonly position: Position;
  readonly message: string;
}

export interface ParsedYaml {
  /** Documents holding something (empty documents, e.g. after a trailing `---`, are left out). */
  readonly documents: readonly YamlDocument[];
  readonly errors: readonly YamlSyntaxError[];
}

/** A YAML mapping, as plain data. */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Aliases that expand more than this are refused (a "billion laughs" document). */
const MAX_ALIAS_COUNT = 100;

export function parseYamlDocuments(text: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter, prettyErrors: false });
  // An empty stream (only comments or nothing) is not an array.
  const docs: Document.Parsed[] = Array.isArray(parsed) ? parsed : [];
  const positionOf = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  const documents: YamlDocument[] = [];
  const errors: YamlSyntaxError[] = [];
  docs.forEach((doc, index) => {
    const number = index + 1;
    for (const error of doc.errors) {
      errors.push({ document: number, position: positionOf(errorOffset(text, error)), message: firstLine(error.message) });
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (err) {
      errors.push({ document: number, position: positionOf(doc.range[0]), message: firstLine(String(err)) });
      return;
    }
    if (value === null || value === undefined) return;
    documents.push({
      number,
      value,
      broken: doc.errors.length > 0,
      locate: (path, target = 'value') => positionOf(locateOffset(doc, path, target)),
      locateInside: (path, offset) => {
        const at = offsetInside(text, doc, path, offset);
        return at === null ? null : positionOf(at);
      },
    });
  });
  return { documents, errors };
}

/**
 * Where to show a syntax error. An unclosed flow collection or quote is detected at the start of
 * the next line (or past the end of the file); the missing character belongs right after the
 * last text before that, so point there.
 */
function errorOffset(text: string, error: YAMLError): number {
  const offset = error.pos[0];
  const missingEnd = error.code === 'MISSING_CHAR' || (error.code === 'BAD_INDENT' && error.message.includes('end with'));
  if (!missingEnd) return offset;
  let end = Math.min(offset, text.length);
  while (end > 0 && /\s/.test(text[end - 1] ?? '')) end--;
  return end;
}

/** Offset of the node at `path`, or of the deepest existing node on the way to it. */
function locateOffset(doc: Document.Parsed, path: readonly PathSegment[], target: LocateTarget): number {
  let node: unknown = doc.contents;
  let pair: Pair | null = null;
  let complete = true;
  for (const segment of path) {
    const next = child(node, segment);
    if (next === null) {
      complete = false;
      break;
    }
    node = next.node;
    pair = next.pair;
  }
  const keyOffset = pair !== null && isNodeWithRange(pair.key) ? pair.key.range[0] : null;
  // The key of a field names it best: for an unknown field, for a missing field (its parent's
  // key), and for a block mapping or list whose first item is on the next line.
  if (keyOffset !== null && (target === 'key' || !complete || !isScalar(node) || isEmptyScalar(node))) {
    return keyOffset;
  }
  if (isNodeWithRange(node)) return node.range[0];
  return doc.range[0];
}

const STYLES: ReadonlySet<string> = new Set<ScalarStyle>(['PLAIN', 'QUOTE_DOUBLE', 'QUOTE_SINGLE', 'BLOCK_LITERAL', 'BLOCK_FOLDED']);
/** The source offsets of a scalar's value, made once per node (a value may have several problems). */
const scalarOffsets = new WeakMap<object, number[] | null>();

/** Source offset of the character at `offset` of the string value at `path`; null when it cannot be known. */
function offsetInside(text: string, doc: Document.Parsed, path: readonly PathSegment[], offset: number): number | null {
  let node: unknown = doc.contents;
  for (const segment of path) {
    const next = child(node, segment);
    if (next === null) return null;
    node = next.node;
  }
  if (!isScalar(node) || typeof node.value !== 'string' || !Array.isArray(node.range) || !STYLES.has(String(node.type))) return null;
  let offsets = scalarOffsets.get(node);
  if (offsets === undefined) {
    offsets = scalarSourceOffsets(text, node.type as ScalarStyle, [node.range[0], node.range[1]], node.value);
    scalarOffsets.set(node, offsets);
  }
  if (offsets === null) return null;
  return offsets[Math.max(0, Math.min(Math.trunc(offset), offsets.length - 1))] ?? null;
}

function child(node: unknown, segment: PathSegment): { node: unknown; pair: Pair | null } | null {
  if (isMap(node)) {
    const pair = node.items.find((item) => isPair(item) && keyText(item.key) === String(segment));
    return pair === undefined ? null : { node: pair.value, pair };
  }
  if (isSeq(node) && typeof segment === 'number') {
    const item: unknown = node.items[segment];
    return item === undefined ? null : { node: item, pair: null };
  }
  return null;
}

function keyText(key: unknown): string | null {
  if (isScalar(key)) return String(key.value);
  return null;
}

function isNodeWithRange(node: unknown): node is Node & { range: [number, number, number] } {
  return (isScalar(node) || isMap(node) || isSeq(node)) && Array.isArray(node.range);
}

/** `key:` with nothing after it: its "position" is after the colon, so point at the key instead. */
function isEmptyScalar(node: unknown): boolean {
  return isScalar(node) && node.value === null && node.range !== undefined && node.range !== null && node.range[0] === node.range[1];
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}
