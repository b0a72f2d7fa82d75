/**
 * Which code a gateway process runs: this checkout, or the one `BENCH_COMPARE` names.
 *
 * `BENCH_COMPARE=/path/to/other/checkout` (or `label=/path`) makes the load, aggregation and
 * protocol generations benchmarks start, next to each gateway they spawn from this checkout, a
 * twin from the other one (its own `plugins/cli/bin.mjs` and `node_modules`, run with that
 * checkout as its working directory) on the same generated configuration, measured in the same
 * run, A and B alternating: a before/after of a change in one run instead of two runs on a
 * machine whose speed moves between them. The label defaults to the other checkout's
 * `git rev-parse --short HEAD`.
 *
 * The other checkout may be older than the configurations the harness writes; a twin that does
 * not start is reported as not available (with the gateway's own error), never a crashed run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotAvailable } from './target.ts';

/** A tree of this repository that a gateway can be started from. */
export interface Checkout {
  /** Its root directory (the gateway's working directory). */
  readonly root: string;
  /** `<root>/plugins/cli/bin.mjs`. */
  readonly bin: string;
  /** How results name it: a short commit (`21d5dcf`), with `+modified` when its tree differs from it. */
  readonly label: string;
}

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const binOf = (root: string): string => join(root, 'plugins', 'cli', 'bin.mjs');

/** Characters a label may have: it ends up in row names, file names and markdown cells. */
const LABEL = /^[\w.~^+-]{1,40}$/;

/** `abc1234`, `abc1234+modified` when tracked files differ from that commit, or null outside git. */
function gitLabel(root: string): string | null {
  const head = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0 || head.error !== undefined) return null;
  const status = spawnSync('git', ['-C', root, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  const modified = status.status === 0 && status.stdout.trim() !== '';
  return `${head.stdout.trim()}${modified ? '+modified' : ''}`;
}

function checkoutAt(root: string, label: string | null): Checkout {
  return { root, bin: binOf(root), label: label ?? gitLabel(root) ?? basename(root) };
}

let thisCheckout: Checkout | undefined;

/** The checkout this harness runs from (label computed once, on first use). */
export function thisCheckoutOf(): Checkout {
  thisCheckout ??= checkoutAt(REPO_ROOT, null);
  return thisCheckout;
}

/** This checkout's gateway entry point: what every benchmark spawns unless told otherwise. */
export const GATEHOUSE_BIN = binOf(REPO_ROOT);

/**
 * The checkout `BENCH_COMPARE` names, or null when it is unset or empty. Throws, naming the
 * variable, when the value is not a directory or its label is unusable: a typo should stop the
 * run before minutes of measuring, not turn every twin into "not available".
 */
export function compareCheckoutFrom(value = process.env['BENCH_COMPARE']): Checkout | null {
  const raw = value?.trim() ?? '';
  if (raw === '') return null;
  // `label=path`, where a label has no `/`: a path that itself holds an `=` (`/tmp/a=b`) stays a path.
  const eq = raw.indexOf('=');
  const prefix = eq > 0 ? raw.slice(0, eq) : '';
  const [label, path] = prefix !== '' && !prefix.includes('/') ? [prefix, raw.slice(eq + 1)] : [null, raw];
  if (label !== null && !LABEL.test(label)) {
    throw new Error(`BENCH_COMPARE=${raw}: the label "${label}" may hold only letters, digits and . _ ~ ^ + - (at most 40)`);
  }
  const root = resolve(path);
  if (!existsSync(root) || !statSync(root).isDirectory()) {
    throw new Error(`BENCH_COMPARE=${raw}: ${root} is not a directory (expected another checkout of this repository, e.g. from git worktree add)`);
  }
  const checkout = checkoutAt(root, label);
  if (!LABEL.test(checkout.label)) return { ...checkout, label: checkout.label.replace(/[^\w.~^+-]+/g, '-').slice(0, 40) };
  return checkout;
}

let compareCheckout: Checkout | null | undefined;

/** `compareCheckoutFrom()` of this process's environment, read once. */
export function compareCheckoutOf(): Checkout | null {
  if (compareCheckout === undefined) compareCheckout = compareCheckoutFrom();
  return compareCheckout;
}

/**
 * Throws `NotAvailable` when `checkout` cannot start a gateway at all: no `plugins/cli/bin.mjs`
 * (a tree from before the command line) or no `node_modules` (not installed). Anything else a
 * gateway of that tree trips over is its own error, at start.
 */
export function assertRunnable(checkout: Checkout): void {
  if (!existsSync(checkout.bin)) throw new NotAvailable(`${checkout.bin} does not exist (${checkout.label})`);
  if (!existsSync(join(checkout.root, 'node_modules'))) {
    throw new NotAvailable(`${checkout.root} has no node_modules: run npm ci --no-audit --no-fund there (${checkout.label})`);
  }
}

/**
 * A file-name-safe suffix that tells a twin's files (configs, profiles) from the subject's: a
 * twin is started with its checkout, this checkout's gateways without one (so BENCH_COMPARE
 * naming this very tree, an A/A run to see the noise, still gets files of its own).
 */
export function fileSuffix(checkout: Checkout | undefined): string {
  return checkout === undefined ? '' : `@${checkout.label.replace(/[^\w.+-]+/g, '-')}`;
}
