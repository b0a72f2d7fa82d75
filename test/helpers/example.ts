/**
 * Runs one of examples/ as a newcomer would (`npm start`, `npm run start:auth`), on a copy of its
 * config whose loopback ports are rewritten to free ones, so it never fights an example a
 * developer is running.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { REPO_ROOT, freePort, waitFor } from '../fixtures/processes.ts';
import { writeConfig } from './gateway.ts';

/** `example`'s YAML with each `127.0.0.1:<port>` of `ports` rewritten to a free port; resolves with both. */
export async function exampleOnFreePorts(example: string, ports: readonly number[]): Promise<{ yaml: string; port: Map<number, number> }> {
  const port = new Map<number, number>();
  for (const p of ports) port.set(p, await freePort());
  let yaml = await readFile(`${REPO_ROOT}${example}`, 'utf8');
  for (const [from, to] of port) yaml = yaml.replaceAll(`127.0.0.1:${from}`, `127.0.0.1:${to}`);
  // Every address is rewritten, comments included: no port of an example that may be running here is used.
  assert.doesNotMatch(yaml, new RegExp(`127\\.0\\.0\\.1:(${ports.join('|')})\\b`));
  return { yaml, port };
}

/**
 * Starts `script` (a path under the repository) with its config `yaml` in the environment
 * variable `configVariable`; calls `use` once it printed `ready`, then stops it with SIGTERM and
 * checks that it exited 0.
 */
export async function withExample(script: string, configVariable: string, yaml: string, ready: string, use: (stdout: () => string) => Promise<void>): Promise<void> {
  const config = await writeConfig(yaml);
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, [configVariable]: config, LOG_LEVEL: 'warn' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'close');
  try {
    await waitFor(() => stdout.includes(ready), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${stderr}`);
    });
    await use(() => stdout);
  } finally {
    child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0, stderr);
  }
}
