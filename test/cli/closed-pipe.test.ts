/**
 * Output to a closed pipe (`gatehouse --help | head -1`, a log reader that went away) ends
 * quietly: every command exits with the status it would have had, without a stack trace, and a
 * server whose stdout closed keeps serving and stops cleanly on SIGTERM. The pipe is closed before
 * the command writes anything (the reading end destroyed as the child starts), so every write of
 * the command meets EPIPE.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort, REPO_ROOT, waitFor } from '../fixtures/processes.ts';
import { BIN, commandPaths } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { tempDir } from '../registry/helpers/registry.ts';

interface Closed {
  /** Close the reading end of the child's stdout, of its stderr, or of both, as it starts. */
  readonly stdout?: boolean;
  readonly stderr?: boolean;
}

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** What the child wrote on the streams left open. */
  readonly stdout: string;
  readonly stderr: string;
}

function spawnClosed(args: string[], closed: Closed): { child: ReturnType<typeof spawn>; ended: Promise<Ended> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  if (closed.stdout === true) child.stdout!.destroy();
  else child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  if (closed.stderr === true) child.stderr!.destroy();
  else child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const ended = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null, stdout, stderr }));
  return { child, ended };
}

const runClosed = (args: string[], closed: Closed): Promise<Ended> => spawnClosed(args, closed).ended;

describe('output to a closed pipe ends quietly, with the usual exit status', () => {
  it('--help of every command, and --version, with stdout closed: 0, and nothing on stderr', async () => {
    const paths = commandPaths();
    assert.ok(paths.length >= 8, paths.map((p) => p.join(' ')).join(', '));
    for (const args of [...paths.map((path) => [...path, '--help']), ['--version']]) {
      const ended = await runClosed(args, { stdout: true });
      assert.deepEqual({ code: ended.code, stderr: ended.stderr }, { code: 0, stderr: '' }, `gatehouse ${args.join(' ')}`);
    }
  });

  it('validate of a good file with stdout closed is 0; of a bad one with stderr closed, 2', async () => {
    const good = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }] }));
    const bad = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'not a url' }] }));
    for (const [args, closed, code] of [
      [['vmcp', 'validate', '--config', good], { stdout: true }, 0],
      [['registry', 'validate', '--config', join(REPO_ROOT, 'examples/registry/registry.yaml')], { stdout: true }, 0],
      [['vmcp', 'validate', '--config', bad], { stderr: true }, 2],
      [['vmcp', 'validate', '--config', bad], { stdout: true, stderr: true }, 2],
    ] as const) {
      const ended = await runClosed([...args], closed);
      assert.equal(ended.code, code, `gatehouse ${args.join(' ')} ${JSON.stringify(closed)}: ${ended.stderr}`);
      assert.doesNotMatch(ended.stderr, /EPIPE|\n\s+at /, 'no stack trace');
    }
  });

  it('a wrong command line, and a command without its subcommand, with stderr closed: 2', async () => {
    for (const args of [['vmcp', 'valdate'], ['vmcp', 'validate', '--confg', 'x'], [], ['bench', '--confg', 'x']]) {
      const ended = await runClosed(args, { stderr: true });
      assert.equal(ended.code, 2, `gatehouse ${args.join(' ')}`);
      assert.equal(ended.stdout, '');
    }
  });

  for (const format of ['json', 'pretty'] as const) {
    it(`vmcp serve whose stdout closed keeps serving and stops with 0 on SIGTERM (${format} logs)`, async () => {
      const config = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }], spec: '  server: {accessLog: true}' }));
      const port = await freePort();
      const { child, ended } = spawnClosed(['vmcp', 'serve', '--config', config, '--port', String(port), '--log-format', format, '--log-level', 'debug'], { stdout: true });
      const healthz = `http://127.0.0.1:${port}/healthz`;
      await waitFor(async () => (await fetch(healthz).catch(() => null))?.status === 200, 20_000);
      // Every request logs (access log, debug): each line meets the closed pipe.
      for (let i = 0; i < 5; i++) assert.equal((await fetch(healthz)).status, 200);
      child.kill('SIGTERM');
      const { code, stderr } = await ended;
      assert.deepEqual({ code, stderr }, { code: 0, stderr: '' });
    });
  }

  it('registry serve whose stdout closed keeps serving and stops with 0 on SIGTERM (the embedded database takes a while to start)', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    const config = join(dir, 'registry.yaml');
    await writeFile(config, 'auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: main, sources: [internal]}]\n');
    const port = await freePort();
    const { child, ended } = spawnClosed(['registry', 'serve', '--config', config, '--port', String(port)], { stdout: true });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null))?.status === 200, 100_000);
    child.kill('SIGTERM');
    const { code, stderr } = await ended;
    assert.deepEqual({ code, stderr }, { code: 0, stderr: '' });
  });
});
