/**
 * Durations as the resources write them, in Go's form: a sequence of numbers with units,
 * `500ms`, `45s`, `10m`, `1h`, `168h`, `1h30m`. Values are milliseconds.
 */
import { z } from 'zod';
import { describeValue } from './problems.ts';

/** For messages: what a duration looks like. */
export const DURATION_FORMS = 'a number with a unit (ms, s, m or h), for example 500ms, 45s, 10m, 1h, 168h or 1h30m';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** One `<number><unit>` component; `ms` is tried before `m`. */
const COMPONENT = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;

/** Milliseconds of a duration such as `1h30m`, or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  if (text === '') return null;
  COMPONENT.lastIndex = 0;
  let total = 0;
  while (COMPONENT.lastIndex < text.length) {
    const match = COMPONENT.exec(text);
    if (match === null) return null;
    const [, amount, unit] = match;
    total += Number(amount) * (UNIT_MS[unit ?? ''] ?? Number.NaN);
  }
  const ms = Math.round(total);
  return Number.isSafeInteger(ms) ? ms : null;
}

/** A zod schema for a duration field: the text in, milliseconds out (zero only when allowed). */
export function durationSchema(options: { allowZero?: boolean } = {}) {
  return z.unknown().transform((value, ctx) => {
    const ms = typeof value === 'string' ? parseDuration(value) : null;
    if (ms !== null && (ms > 0 || options.allowZero === true)) return ms;
    const why = value === undefined ? 'is required' : ms === 0 ? 'must be greater than zero' : `${describeValue(value)} is not a duration`;
    ctx.issues.push({ code: 'custom', input: value, message: `${why}: use ${DURATION_FORMS}` });
    return z.NEVER;
  });
}
