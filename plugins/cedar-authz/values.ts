/**
 * JSON values (token claims, tool arguments) as Cedar values, converted as ToolHive converts them
 * (`convertToCedarValueAtDepth`, pkg/authz/authorizers/cedar/entity.go), in cedar-wasm's JSON form.
 *
 * Numbers: ToolHive decodes claims and arguments with Go's encoding/json, so every number is a
 * float64 and becomes a Cedar `decimal` (cedar-go's `NewDecimalFromFloat`: times 10^4, truncated
 * toward zero), never a `long`, whole numbers included: `context.arg_count == 3` is false and
 * `context.arg_count < 3` is an error (so a deny), `context.arg_count == decimal("3.0")` and
 * `.lessThan(decimal("3.0"))` work. We do the same, so a policy decides here as it does in ToolHive.
 * A number outside the decimal range is left out, as there.
 *
 * `null` and values nested deeper than 10 levels are left out (ToolHive drops them, with a warning
 * for the depth). A key `__entity`, `__extn` or `__expr` of a nested object is left out: in
 * Cedar's JSON form such an object would be read as an entity reference or an extension value,
 * not as the record ToolHive builds, so a token could otherwise forge one. A string with a lone
 * surrogate gets U+FFFD in its place, as Go's JSON decoder does (cedar-wasm refuses it outright).
 */
import type { CedarValueJson } from '@cedar-policy/cedar-wasm/nodejs';

/** ToolHive's `maxClaimNestingDepth`. */
export const MAX_DEPTH = 10;

const ESCAPE_KEYS = new Set(['__entity', '__extn', '__expr']);
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** A string as Cedar may hold it: lone surrogates replaced (Go's decoder does the same). */
export function wellFormed(text: string): string {
  return LONE_SURROGATE.test(text) ? text.replace(LONE_SURROGATES, '\uFFFD') : text;
}

const TWO_63 = 2 ** 63;

/** cedar-go's `NewDecimalFromFloat`: the value times 10^4, truncated toward zero; null when it overflows an int64. */
export function decimalOf(value: number): CedarValueJson | null {
  const scaled = value * 10_000;
  if (!Number.isFinite(scaled) || scaled >= TWO_63 || scaled < -TWO_63) return null;
  const units = BigInt(Math.trunc(scaled));
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const text = `${negative ? '-' : ''}${abs / 10_000n}.${(abs % 10_000n).toString().padStart(4, '0')}`;
  return { __extn: { fn: 'decimal', arg: text } };
}

/** One JSON value as a Cedar value at `depth` (maps and lists already unwrapped); null: left out. */
export function cedarValue(value: unknown, depth: number): CedarValueJson | null {
  if (depth > MAX_DEPTH) return null;
  switch (typeof value) {
    case 'boolean':
      return value;
    case 'string':
      return wellFormed(value);
    case 'number':
      return decimalOf(value);
    case 'object':
      if (value === null) return null;
      if (Array.isArray(value)) {
        const items: CedarValueJson[] = [];
        for (const item of value) {
          const converted = cedarValue(item, depth + 1);
          if (converted !== null) items.push(converted);
        }
        return items;
      }
      return cedarRecord(value as Record<string, unknown>, depth + 1, true);
    default:
      return null;
  }
}

/** A JSON object as a Cedar record; `nested`: an object inside a value, whose escape keys are left out. */
export function cedarRecord(object: Readonly<Record<string, unknown>>, depth: number, nested = false): Record<string, CedarValueJson> {
  const record: Record<string, CedarValueJson> = {};
  for (const [key, item] of Object.entries(object)) {
    if (nested && ESCAPE_KEYS.has(key)) continue;
    const converted = cedarValue(item, depth);
    if (converted !== null) record[wellFormed(key)] = converted;
  }
  return record;
}
