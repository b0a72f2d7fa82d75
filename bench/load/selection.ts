/**
 * Which rows of the load benchmark run, and in which order each round.
 *
 * - `BENCH_ROWS=nginx,http-proxy` runs only the rows whose name contains one of the words.
 * - With `BENCH_COMPARE` (checkout.ts), `withTwins` follows every gatehouse row (role `subject`)
 *   with its twin, `<name> @ <label>`: the same row, its gateway started from the other checkout
 *   (every gatehouse row starts its gateway through `startGatehouse`, which reads the checkout
 *   from the row's context). A twin is a subject too, so its ratios to nginx and http-proxy are
 *   taken like its row's; `BENCH_ROWS` selecting a row selects its twin.
 * - Rounds interleave the rows; a row and its twin run back to back, swapping places every
 *   other round (`roundOrder`).
 */
import type { Checkout } from './checkout.ts';
import type { Row } from './target.ts';

/** `<row name> @ <label>`: the name of a row's twin on the compared checkout. */
export const twinName = (name: string, checkout: Checkout): string => `${name} @ ${checkout.label}`;

/** The rows, each subject followed by its twin on `other` (the rows as they are when null). */
export function withTwins(all: readonly Row[], other: Checkout | null): Row[] {
  if (other === null) return [...all];
  return all.flatMap((row): Row[] => {
    if (row.role !== 'subject') return [row];
    const twin: Row = { ...row, name: twinName(row.name, other), twinOf: row.name, start: (ctx) => row.start({ ...ctx, checkout: other }) };
    return [row, twin];
  });
}

/** The rows selected by `BENCH_ROWS` (comma-separated name fragments; a twin goes with its row), or all. */
export function selectedRows(all: readonly Row[], filter = process.env['BENCH_ROWS']): Row[] {
  if (filter === undefined || filter.trim() === '') return [...all];
  const words = filter.split(',').map((w) => w.trim().toLowerCase()).filter((w) => w !== '');
  const matches = (name: string): boolean => words.some((w) => name.toLowerCase().includes(w));
  return all.filter((r) => matches(r.name) || (r.twinOf !== undefined && matches(r.twinOf)));
}

/**
 * The order of the rows in round `round` (1-based): as listed in odd rounds, reversed in even
 * ones, so no row always runs at one place of the round (right after another warmed the
 * backend, or into a drift of the machine): a row and its twin, listed side by side, swap
 * places, and a row compared with the one listed before it (a feature on ÷ off) runs before it
 * every other round.
 */
export function roundOrder(rows: readonly Row[], round: number): number[] {
  const order = rows.map((_, i) => i);
  return round % 2 !== 0 ? order : order.reverse();
}
