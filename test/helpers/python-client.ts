/**
 * The official Python MCP client (`mcp`, test/python/requirements.txt) as a test client: a
 * plan of steps goes to test/python/mcp_client.py, one JSON line comes back per step.
 *
 * The interpreter is `GATEHOUSE_TEST_PYTHON`, else the repository's `.venv/bin/python` (made by
 * `python3 -m venv .venv && .venv/bin/pip install -r test/python/requirements.txt`; .ci/run does
 * it). Without one that imports `mcp`, the suites skip with the reason (fail under CI=true).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { unavailable, type Skip } from '../store/helpers/service.ts';

const SCRIPT = join(REPO_ROOT, 'test/python/mcp_client.py');

let found: { python: string } | { reason: string } | undefined;
let told = false;

/**
 * The interpreter with the Python `mcp` client, or why there is none: `{ skip }`, the reason
 * printed once; under CI=true it throws instead (call it inside a test, so only that test fails).
 */
export function pythonClient(suite: string): { python: string } | Skip {
  if (found === undefined) {
    const python = process.env['GATEHOUSE_TEST_PYTHON'] ?? join(REPO_ROOT, '.venv/bin/python');
    if (!existsSync(python)) {
      found = { reason: `no Python with the mcp client at ${python} (python3 -m venv .venv && .venv/bin/pip install -r test/python/requirements.txt)` };
    } else {
      const probe = spawnSync(python, ['-c', 'import mcp.client, httpx2'], { encoding: 'utf8', timeout: 30_000 });
      found = probe.status === 0 ? { python } : { reason: `${python} cannot import the mcp client: ${(probe.stderr || probe.error?.message || '').trim().split('\n').at(-1)}` };
    }
  }
  if ('python' in found) return found;
  if (told && process.env['CI'] !== 'true') return { skip: found.reason };
  told = true;
  return unavailable(suite, found.reason);
}

export type PythonMode = 'legacy' | 'auto' | '2026-07-28';

export type PythonStep = { op: 'era' } | { op: 'tools' } | { op: 'whoami' } | { op: 'call'; tool: string; args?: Record<string, unknown> };

export type PythonOutcome = { ok: true; value: unknown; progress?: number[]; version?: string } | { ok: false; error: string };

export interface PythonRunOptions {
  /**
   * Log in with the SDK's OAuth support: called with the authorization URL the client would open
   * in a browser; resolves with the redirect URL the browser reached (the client's callback).
   */
  readonly oauth?: (authorizationUrl: string) => Promise<string>;
  readonly timeoutMs?: number;
}

/** Runs `plan` against `url`; resolves with each step's outcome (a connect failure is one outcome with ok false). */
export async function runPythonClient(python: string, url: string, mode: PythonMode, plan: readonly PythonStep[], options: PythonRunOptions = {}): Promise<PythonOutcome[]> {
  const args = [SCRIPT, url, mode, JSON.stringify(plan), ...(options.oauth === undefined ? [] : ['--oauth'])];
  const child = spawn(python, args, { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const outcomes: PythonOutcome[] = [];
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const lines = createInterface({ input: child.stdout });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  try {
    for await (const line of lines) {
      if (line.startsWith('AUTHORIZE ')) {
        if (options.oauth === undefined) throw new Error('the Python client asked for a login it was not given');
        const reached = await options.oauth(line.slice('AUTHORIZE '.length));
        child.stdin.write(`CALLBACK ${reached}\n`);
        continue;
      }
      if (line.trim() === '') continue;
      outcomes.push(JSON.parse(line) as PythonOutcome);
    }
    const code = await exited;
    if (code !== 0 && code !== 2) throw new Error(`the Python client exited with ${String(code)}: ${stderr.trim().split('\n').slice(-5).join('\n')}`);
    return outcomes;
  } finally {
    clearTimeout(timer);
    child.stdin.end();
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
