/**
 * The CPU profile summariser of `npm run bench:profile` (bench/profile/), over a hand-made
 * profile (test/bench/tiny.cpuprofile): time from the sample timestamps (not the hit counts),
 * the measured window, the folded stacks, the categories and the markdown that scales them by the
 * row's CPU per request. Nothing is started or measured here.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { foldedText, readCpuProfile, stacks, timePerNode } from '../../bench/profile/cpuprofile.ts';
import { categoryOf, declarationLine, displayPath, FrameLocator } from '../../bench/profile/frames.ts';
import { commandLine, mainThreadProfiles, slug } from '../../bench/profile/files.ts';
import { rowMarkdown, summariseRow } from '../../bench/profile/summary.ts';

const profile = readCpuProfile(fileURLToPath(new URL('./tiny.cpuprofile', import.meta.url)));
const ROOT = '/repo';
const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Samples at 1100 (idle), 1200 (dispatch), 1400, 1500 (writeBuffer), 1800 (GC), 1900 (onMessage),
// 2000 (idle), 2100 (writeBuffer); each lasts until the next one, the last until endTime (2150).
describe('a CPU profile as time', () => {
  it('gives each sample the time until the next one, not one hit each', () => {
    const counts = new Map<number, number>();
    const time = timePerNode(profile, null, counts);
    assert.deepEqual(Object.fromEntries(time), { 2: 200, 5: 200, 6: 450, 3: 100, 7: 100 });
    assert.deepEqual(Object.fromEntries(counts), { 2: 2, 5: 1, 6: 3, 3: 1, 7: 1 });
  });

  it('keeps only the samples taken inside the windows', () => {
    const time = timePerNode(profile, [{ startMicros: 1150, endMicros: 1850 }]);
    assert.deepEqual(Object.fromEntries(time), { 5: 200, 6: 400, 3: 100 });
    assert.equal(timePerNode(profile, [{ startMicros: 5000, endMicros: 6000 }]).size, 0);
  });

  it('folds the stacks root first, without (root) nor (idle), and folds thin ones into their parent', () => {
    const locate = new FrameLocator(ROOT);
    const folded = stacks(profile, timePerNode(profile, null), (f) => locate.label(f));
    const http = 'parserOnIncoming (node:_http_server:1026)';
    const dispatch = 'dispatch (core/upstream/pool.ts:~)';
    assert.deepEqual(Object.fromEntries(folded), {
      [`${http};${dispatch};writeBuffer (native)`]: 450,
      [`${http};${dispatch}`]: 200,
      '(garbage collector)': 100,
      [`${http};onMessage (plugins/tool-allowlist/hooks.ts:~)`]: 100,
    });
    assert.equal(
      foldedText(folded, 150),
      [`${http};${dispatch};writeBuffer (native) 450`, `${http};${dispatch} 200`, '(other) 100', `${http};(other) 100`].join('\n'),
    );
  });
});

describe('a row\'s summary', () => {
  it('splits the busy time by category and by function, and scales it by the measured CPU per request', () => {
    const row = summariseRow([profile], null, ROOT);
    assert.deepEqual([row.profiles, row.samples, row.busyMicros, row.idleMicros], [1, 8, 850, 200]);
    assert.deepEqual(row.categories, [
      { name: 'socket writes (native, the write system calls)', micros: 450 },
      { name: 'core/upstream', micros: 200 },
      { name: 'GC (on the main thread)', micros: 100 },
      { name: 'plugins/tool-allowlist', micros: 100 },
    ]);
    assert.deepEqual(row.functions[0], { name: 'writeBuffer (native)', micros: 450, category: 'socket writes (native, the write system calls)' });
    const md = rowMarkdown(row, { name: 'gatehouse (x)', cpuMicrosPerRequest: 85, cpuVsNginx: 2.5, cpuVsHttpProxy: 0.5, foreignCpuPercent: 3 }, 'gatehouse-x.folded');
    assert.match(md, /^### gatehouse \(x\)\n\nCPU 85\.0 µs\/request, ×nginx 2\.50, ×http-proxy 0\.50 \(other processes 3 % of the machine\)\. Main thread: 8 samples in 1 profile, busy 1 ms, idle 19 %/);
    // 450 of 850 µs busy: 52.9 %, and that share of 85 µs/request.
    assert.match(md, /\n\| socket writes \(native, the write system calls\) \| 52\.9 \| 45\.0 \|\n/);
    assert.match(md, /\n\| `dispatch \(core\/upstream\/pool\.ts:~\)` \| core\/upstream \| 23\.5 \| 20\.00 \|\n/);
    assert.match(md, /\[`gatehouse-x\.folded`\]\(gatehouse-x\.folded\)/);
  });

  it('two profiles (two rounds, or two workers) add up', () => {
    const row = summariseRow([profile, profile], null, ROOT);
    assert.deepEqual([row.profiles, row.samples, row.busyMicros], [2, 16, 1700]);
    assert.equal(row.folded.get('(garbage collector)'), 200);
  });
});

describe('frames', () => {
  it('categories: V8\'s pseudo-frames, native writes, node:http, the core by folder, plugins, packages', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0, columnNumber: 0 });
    assert.equal(categoryOf(frame('(idle)', ''), ROOT), 'idle');
    assert.equal(categoryOf(frame('(program)', ''), ROOT), 'V8 and native code, no JS on the stack');
    assert.equal(categoryOf(frame('writev', ''), ROOT), 'socket writes (native, the write system calls)');
    assert.equal(categoryOf(frame('execute', ''), ROOT), 'HTTP parser (llhttp and its callbacks)');
    assert.equal(categoryOf(frame('parserOnHeadersComplete', 'node:_http_common'), ROOT), 'HTTP parser (llhttp and its callbacks)');
    assert.equal(categoryOf(frame('parse', ''), ROOT), 'JSON.parse / JSON.stringify');
    assert.equal(categoryOf(frame('_storeHeader', 'node:_http_outgoing'), ROOT), 'node:http');
    assert.equal(categoryOf(frame('onStreamRead', 'node:internal/stream_base_commons'), ROOT), 'node:net and streams');
    assert.equal(categoryOf(frame('emit', 'node:events'), ROOT), 'node internals, other (events, ticks, timers, buffers, ...)');
    assert.equal(categoryOf(frame('end', 'file:///repo/core/http/wire/response.ts'), ROOT), 'core/http');
    assert.equal(categoryOf(frame('x', 'file:///repo/core/index.ts'), ROOT), 'core');
    assert.equal(categoryOf(frame('x', 'file:///repo/node_modules/http-proxy/lib/x.js'), ROOT), 'http-proxy (npm)');
    assert.equal(categoryOf(frame('x', 'file:///elsewhere/node_modules/pino/x.js'), ROOT), 'npm packages, other');
    assert.equal(categoryOf(frame('answer', 'file:///repo/bench/load/backend.ts'), ROOT), 'bench scripts (backends, reference and floor servers)');
    assert.equal(categoryOf(frame('main', 'file:///repo/plugins/cli/bench/http-proxy-server.ts'), ROOT), 'bench scripts (backends, reference and floor servers)');
    assert.equal(categoryOf(frame('serve', 'file:///repo/plugins/cli/serve.ts'), ROOT), 'plugins/cli');
    assert.equal(categoryOf(frame('x', 'file:///elsewhere/x.js'), ROOT), 'other');
  });

  it('paths relative to the repository or from node_modules/; TypeScript lines by the function\'s declaration', () => {
    assert.equal(displayPath('file:///repo/core/a.ts', ROOT), 'core/a.ts');
    assert.equal(displayPath('file:///x/node_modules/tsx/dist/a.mjs', ROOT), 'node_modules/tsx/dist/a.mjs');
    assert.equal(displayPath('node:net', ROOT), 'node:net');
    const source = [
      'import x from "y";',
      'export class Pool {',
      '  readonly size = 3;',
      '  dispatch(request: R): void {',
      '  #drain = (): void => {};',
      '  private async release<T>(c: T) {',
      '  get idle(): number {',
      '}',
      'export const helper = (a: number) => a;',
      'function plain() {}',
    ].join('\n');
    assert.deepEqual(
      ['Pool', 'dispatch', '#drain', 'release', 'get idle', 'helper', 'plain', 'size', 'missing', '<instance_members_initializer>'].map((n) => declarationLine(source, n)),
      [2, 4, 5, 6, 7, 9, 10, undefined, undefined, undefined],
    );
    const file = join(dir, 'a.ts');
    writeFileSync(file, source);
    const locate = new FrameLocator(dir);
    assert.equal(locate.where({ functionName: 'dispatch', url: `file://${file}`, lineNumber: 0, columnNumber: 400 }), 'a.ts:4');
    assert.equal(locate.where({ functionName: 'emit', url: 'node:events', lineNumber: 470, columnNumber: 0 }), 'node:events:471');
    assert.equal(locate.label({ functionName: '', url: 'node:events', lineNumber: 9, columnNumber: 0 }), '(anonymous) (node:events:10)');
  });
});

describe('the command', () => {
  it('finds the main-thread profiles (thread 0) of the row\'s processes', () => {
    for (const name of ['anonymous/CPU.20261129.182123.8249.0.001.cpuprofile', 'anonymous/CPU.20261129.182123.8249.1.002.cpuprofile', 'other/CPU.20261129.182123.9999.0.001.cpuprofile', 'workers/CPU.20261129.182236.8946.0.001.cpuprofile']) {
      const path = join(dir, 'raw', name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, '{}');
    }
    const found = mainThreadProfiles(join(dir, 'raw'), new Set([8249, 8946])).map((p) => p.slice(join(dir, 'raw').length + 1));
    assert.deepEqual(found, ['anonymous/CPU.20261129.182123.8249.0.001.cpuprofile', 'workers/CPU.20261129.182236.8946.0.001.cpuprofile']);
  });

  it('names a row\'s file, and says which command made the run', () => {
    assert.equal(slug('gatehouse (anonymous, transparent)'), 'gatehouse-anonymous-transparent');
    assert.equal(slug('gatehouse (oidc + tokenExchange, cached) @ before'), 'gatehouse-oidc-tokenexchange-cached-before');
    assert.equal(commandLine({ BENCH_ROWS: 'nginx,http-proxy,anonymous', BENCH_DURATION: '5', BENCH_ROUNDS: '3', BENCH_WRK: 'x' }), 'BENCH_ROWS=nginx,http-proxy,anonymous BENCH_DURATION=5 BENCH_ROUNDS=3 npm run bench:profile');
    assert.equal(commandLine({ BENCH_ROWS: 'gatehouse (anonymous' }), "BENCH_ROWS='gatehouse (anonymous' npm run bench:profile");
  });
});
