/**
 * What a JSON body may hold before the registry stores any of it: at most 32 levels of nesting
 * (a server.json needs fewer than ten; a body nested 100,000 deep exhausted the stack on the way
 * to the database), no NUL character in any string or key (PostgreSQL's text and jsonb refuse
 * it), and no lone UTF-16 surrogate (it is no text at all: it cannot be encoded in a URL or
 * compared as a name). The problem names the JSON path.
 */
const MAX_JSON_DEPTH = 32;

/** A lone surrogate: a high one not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` is well-formed Unicode (String.prototype.isWellFormed, on Node 20's lib). */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function member(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** The first problem of `value` (depth-first, iterative), or null. */
export function jsonValueProblem(value: unknown): string | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: '$', depth: 0 }];
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return `${path} contains a NUL character (\\u0000)`;
      if (!isWellFormedText(current)) return `${path} contains a lone UTF-16 surrogate (not text)`;
      continue;
    }
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= MAX_JSON_DEPTH) return `${path} is nested more than ${MAX_JSON_DEPTH} levels deep`;
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(current);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      if (key.includes('\u0000')) return `${path} has a key with a NUL character (\\u0000)`;
      if (!isWellFormedText(key)) return `${path} has a key with a lone UTF-16 surrogate (not text)`;
      stack.push({ value: (current as Record<string, unknown>)[key], path: member(path, key), depth: depth + 1 });
    }
  }
  return null;
}

/** JSON values a synced read may hold (parsed, a value takes up to ~80 bytes of heap; ~40 make a server.json). */
export const MAX_SYNCED_JSON_VALUES = 4_000_000;

const COMMA = 0x2c;
const BRACKET = 0x5b;
const BRACE = 0x7b;

/**
 * An upper bound on the JSON values in `text`, counted before it is parsed: every value but the
 * first of a container follows a comma, and every container opens with a bracket or a brace
 * (those inside strings are counted too). Parsing takes up to ~20 times the text's size in heap
 * (`[{},{},…]`), so a read is judged on this count rather than on its bytes alone.
 */
export function jsonValueBound(text: string | Uint8Array): number {
  let count = 1;
  if (typeof text === 'string') {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === COMMA || c === BRACKET || c === BRACE) count++;
    }
  } else {
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === COMMA || c === BRACKET || c === BRACE) count++;
    }
  }
  return count;
}
