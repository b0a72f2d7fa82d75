/**
 * A running `serve` as an operator sees it: the log format (pretty on a terminal, JSON on a pipe,
 * `--log-format` or GATEHOUSE_LOG_FORMAT to choose), and SIGHUP, which reloads the configuration
 * (test/gateway/reload.test.ts has the rest) and does not end the process.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { SIGHUP_MESSAGE } from '../../plugins/cli/signals.ts';
import { REPO_ROOT, waitFor } from '../fixtures/processes.ts';
import { BIN, serveCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

/** A gateway whose one backend is not there: it starts all the same (the backend is only unhealthy). */
const config = (): Promise<string> => writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }] }));

interface Served {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

/** Starts `command` and resolves once a stdout line matches `ready`. */
async function startUntil(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<Served> {
  const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env } });
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'close').then(([code]) => code as number | null);
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (ready.test(line)) resolve();
    });
    void exited.then((code) => reject(new Error(`exited with ${code} before ${ready}: ${lines.join('\n')}\n${stderr}`)));
  });
  return { child, lines, exited };
}

const PRETTY_LISTENING = /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: virtual MCP server listening \{"url":"http:\/\/127\.0\.0\.1:\d+\/mcp"/;

describe('log format', () => {
  it('JSON on a pipe by default: one object per line', async () => {
    const served = await serveCli('vmcp', await config());
    assert.ok(served.logs.some((l) => l.msg === 'virtual MCP server listening' && l.level === 'info'));
    assert.equal(await served.stop(), 0);
  });

  for (const [how, args, env] of [
    ['--log-format pretty', ['--log-format', 'pretty'], {}],
    ['GATEHOUSE_LOG_FORMAT=pretty', [], { GATEHOUSE_LOG_FORMAT: 'pretty' }],
  ] as const) {
    it(`pretty with ${how}: time, level, message and fields on one line, no colours on a pipe`, async () => {
      const served = await startUntil(process.execPath, [BIN, 'vmcp', 'serve', '--config', await config(), '--port', '0', ...args], env, /virtual MCP server listening/);
      const line = served.lines.find((l) => l.includes('virtual MCP server listening'))!;
      assert.match(line, PRETTY_LISTENING);
      assert.ok(!line.includes('\u001b['), 'no colour codes when stdout is not a terminal');
      served.child.kill('SIGTERM');
      assert.equal(await served.exited, 0);
      assert.ok(served.lines.some((l) => / INFO: stopped/.test(l)));
    });
  }

  it('--log-format json wins over GATEHOUSE_LOG_FORMAT', async () => {
    const served = await startUntil(process.execPath, [BIN, 'vmcp', 'serve', '--config', await config(), '--port', '0', '--log-format', 'json'], { GATEHOUSE_LOG_FORMAT: 'pretty' }, /listening/);
    const entry = JSON.parse(served.lines.find((l) => l.includes('listening'))!) as { msg: string };
    assert.equal(entry.msg, 'virtual MCP server listening');
    served.child.kill('SIGTERM');
    assert.equal(await served.exited, 0);
  });

  it('pretty by default on a terminal, in colour', async (t) => {
    // util-linux `script` gives the command a pseudo-terminal; `exec` keeps the shell's pid, which it prints first.
    if (spawnSync('script', ['--version']).status !== 0) {
      if (process.env.CI === 'true') assert.fail('util-linux `script` is needed to run the gateway on a terminal');
      t.skip('util-linux `script` is not installed: cannot give the gateway a terminal');
      return;
    }
    const inner = `echo PID $$; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} vmcp serve --config ${JSON.stringify(await config())} --port 0`;
    const served = await startUntil('script', ['-qec', inner, '/dev/null'], { GATEHOUSE_LOG_FORMAT: undefined }, /virtual MCP server listening/);
    const pid = Number(/PID (\d+)/.exec(served.lines.join('\n'))![1]);
    const line = served.lines.find((l) => l.includes('virtual MCP server listening'))!;
    assert.match(line, /\u001b\[32mINFO\u001b\[39m/, `a green INFO in ${JSON.stringify(line)}`);
    assert.doesNotMatch(line, /^\{/);
    process.kill(pid, 'SIGTERM');
    assert.equal(await served.exited, 0, 'script passes on the gateway\'s exit code');
  });
});

describe('SIGHUP', () => {
  it('reloads the configuration (here unchanged) and does not end the process; SIGTERM still stops it with 0', async () => {
    const served = await serveCli('vmcp', await config());
    served.child.kill('SIGHUP');
    const line = await waitFor(() => served.logs.find((l) => l.msg === 'reload: the configuration is unchanged, nothing to apply'));
    assert.equal(line.level, 'info');
    assert.equal(served.logs.find((l) => l.msg === 'reload started')?.trigger, 'SIGHUP');
    assert.ok(!served.logs.some((l) => l.msg === SIGHUP_MESSAGE));
    const health = await fetch(new URL('/healthz', served.url));
    assert.equal(health.status, 200, 'still serving after SIGHUP');
    assert.equal(served.child.exitCode, null);
    assert.equal(await served.stop(), 0);
  });
});
