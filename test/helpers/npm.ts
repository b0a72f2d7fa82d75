/**
 * The package as npm delivers it, for the tests that install it: `npm pack` of the checkout, and
 * `npm install` with the flags that take the dependencies from npm's cache when it has them.
 * Without npm, or when `npm ping` cannot reach the registry, those tests are skipped with the
 * reason, and fail under CI=true.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../fixtures/processes.ts';

const run = promisify(execFile);

/** What a user's install would do, minus the noise, preferring npm's cache. */
export const INSTALL_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline', '--omit=dev', '--loglevel=error'];

export interface Packed {
  readonly tarball: string;
  /** Paths inside the package. */
  readonly files: string[];
}

/** Runs npm in `cwd`; its standard output. */
export async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
  return stdout;
}

/** Why npm cannot install packages from `cwd` (npm missing, or the registry unreachable), or null. */
export async function npmUnavailable(cwd: string): Promise<{ readonly reason: string; readonly npmMissing: boolean } | null> {
  try {
    await npm(['--version'], cwd);
  } catch (err) {
    return { reason: `npm is not available: ${(err as Error).message}`, npmMissing: true };
  }
  try {
    await npm(['ping', '--fetch-retries=0', '--fetch-timeout=10000'], cwd);
  } catch (err) {
    const lines = ((err as { stderr?: string }).stderr ?? (err as Error).message).split('\n');
    return { reason: `the npm registry cannot be reached to install the dependencies (npm ping: ${lines.find((l) => /error/i.test(l)) ?? lines[0]})`, npmMissing: false };
  }
  return null;
}

/** `npm pack` of `dir` (default: the checkout, i.e. the gateway) into `destination`. */
export async function pack(destination: string, dir = REPO_ROOT): Promise<Packed> {
  const [info] = JSON.parse(await npm(['pack', '--json', '--pack-destination', destination], dir)) as { filename: string; files: { path: string }[] }[];
  return { tarball: join(destination, info!.filename), files: info!.files.map((f) => f.path) };
}

/** Skips the test with `reason`, or fails it under CI=true (where the registry must be reachable). */
export function skipOrFail(t: TestContext, reason: string): void {
  if (process.env.CI === 'true') assert.fail(reason);
  t.skip(reason);
}
