/**
 * The data model of the load benchmark: a row is something to measure, a target is a started
 * row. Rows are plain data (see rows.ts): adding a variant is adding an entry to a list.
 */
import type { Checkout } from './checkout.ts';

/** A running server under load. */
export interface Target {
  /** Full URL of the MCP endpoint wrk POSTs to, e.g. `http://127.0.0.1:4000/mcp`. */
  url: string;
  /**
   * Root pids of the process(es) doing the work. CPU time and peak RSS are summed over these
   * and all their descendants (e.g. nginx master + worker).
   */
  pids: number[];
  /** Headers known only once started (e.g. a freshly minted bearer token); merged over the row's. */
  headers?: Record<string, string>;
  /** Stops every process the target started. Must not throw. */
  stop(): Promise<void>;
}

/**
 * What a row is, for the ratios: `direct` is the backend answering itself (the floor of
 * node:http), `reference` is nginx (every row's CPU is divided by it), `baseline` is bare
 * http-proxy (subjects are compared with it), `floor` is the least a proxy in a Node process can
 * cost (floor-proxy.ts), `subject` is a gatehouse variant.
 */
export type RowRole = 'direct' | 'reference' | 'baseline' | 'floor' | 'subject';

/** Shared by every row of one run. */
export interface RowContext {
  /** MCP endpoint of the shared backend the proxies forward to. */
  backendUrl: string;
  /** A per-run temp dir; a row may create files and dirs inside it (removed at the end). */
  tmpDir: string;
  /**
   * The checkout a gatehouse row starts its gateway from: unset for this one, the
   * `BENCH_COMPARE` checkout for a twin (see `withTwins` in rows.ts).
   */
  checkout?: Checkout;
}

export interface Row {
  name: string;
  role: RowRole;
  /** Starts the target. Throw `NotAvailable` (or any error) to report the row as not available. */
  start(ctx: RowContext): Promise<Target>;
  /** Extra request headers for every request of this row (e.g. `authorization`); an empty value removes one of CALL_HEADERS. */
  headers?: Record<string, string>;
  /** The request body, when not CALL_BODY (wrk.ts): the same call in another envelope (modes.ts). */
  body?: string;
  /**
   * A twin's subject: the name of the row this one repeats with the gateway of the
   * `BENCH_COMPARE` checkout (same role, config and headers, so the same ratios).
   */
  twinOf?: string;
}

/** A row that cannot run on this machine or in this tree (yet): reported, not fatal. */
export class NotAvailable extends Error {
  override name = 'NotAvailable';
}
