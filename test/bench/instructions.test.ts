/**
 * The load rows in instructions (bench/load/instructions.ts), without valgrind: what runs under
 * callgrind, how the dumps of a row's processes are added up, and the report's ratios.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { callgrindWrapper, collectorShare, dumpTotal, instructionsMarkdown, rowFigure, type LoadInstructionsReport } from '../../bench/load/instructions.ts';

describe('load rows in instructions', () => {
  it('runs node single-threaded under callgrind, one output per process, and other programs as they are', () => {
    const wrapper = callgrindWrapper('/tmp/x');
    const [program, args] = wrapper.wrap(process.execPath, ['--import', 'tsx', 'a.ts']);
    assert.equal(program, 'valgrind');
    assert.ok(args.includes('--tool=callgrind') && args.includes('--callgrind-out-file=/tmp/x/cg.%p'), args.join(' '));
    assert.deepEqual(args.slice(args.indexOf(process.execPath)), [process.execPath, '--single-threaded', '--no-memory-reducer', '--perf-basic-prof', '--import', 'tsx', 'a.ts']);
    const [, nginx] = wrapper.wrap('/usr/sbin/nginx', ['-c', 'n.conf']);
    assert.deepEqual(nginx.slice(nginx.indexOf('/usr/sbin/nginx')), ['/usr/sbin/nginx', '-c', 'n.conf']);
    assert.ok(wrapper.slowdown > 1, 'start timeouts are longer under valgrind');
  });

  it('adds up the measured dumps of every process of the row, and no other dump, and waits for each process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-instructions-test-'));
    try {
      const dump = (trigger: string, total: number): string => `# callgrind format\nversion: 1\ndesc: Trigger: dump ${trigger}\n\nevents: Ir\nsummary: ${total}\n\nfn=(1) main\n1 ${total}\ntotals: ${total}\n`;
      const count = (instructions: number) => ({ instructions, collector: 0, collections: 0 });
      writeFileSync(join(dir, 'cg.100'), '');
      writeFileSync(join(dir, 'cg.101'), '');
      writeFileSync(join(dir, 'cg.100.1'), dump('measured', 1_000_000));
      writeFileSync(join(dir, 'cg.101.1'), dump('measured', 250_000));
      writeFileSync(join(dir, 'cg.102.1'), dump('measured', 7)); // not a process of the row
      writeFileSync(join(dir, 'cg.100.2'), dump('warm', 5));
      assert.deepEqual(dumpTotal(dir, ['100', '101'], 'measured'), count(1_250_000));
      assert.equal(dumpTotal(dir, ['100', '101', '103'], 'measured'), null, 'one process has not dumped yet');
      writeFileSync(join(dir, 'cg.100.3'), dump('measured', 40)); // the command sent again: what ran after the first dump
      assert.deepEqual(dumpTotal(dir, ['100', '101'], 'measured'), count(1_250_040));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes a row\'s figure as its least window without the garbage collector, plus collections per window × the median collection', () => {
    // Windows of 1,000: a scavenge (about 4,000 a request) in most, none in one, a heavy collection
    // in one (40,000), and one window V8 recompiled in.
    const windows = [144_000, 140_200, 190_000, 143_900, 184_000];
    const collector = [4_000, 0, 4_100, 3_900, 40_000];
    const collections = [1, 0, 1, 1, 1];
    assert.equal(collectorShare(collector, collections), (4 / 5) * 4_050);
    assert.equal(rowFigure(windows, collector, collections), 140_000 + 3_240);
    assert.equal(collectorShare([8_000], [2]), 8_000, 'two in one window: each is half');
    assert.equal(rowFigure([100], [0], [0]), 100);
  });

  it('gives each row as a ratio to nginx, http-proxy, the HTTP floor and the anonymous gateway, and says why a row has no count', () => {
    const row = (name: string, perRequest: number | null, status: 'ok' | 'failed' = 'ok') =>
      ({ name, role: 'subject', status, reason: status === 'ok' ? null : 'check request: HTTP 401\nmore', requests: 10, instructionsPerRequest: perRequest, windows: perRequest === null ? [] : [perRequest * 1.2, perRequest, perRequest], collectorWindows: perRequest === null ? [] : [0, 300, 0], collectionWindows: perRequest === null ? [] : [0, 2, 0] }) as const;
    const report: LoadInstructionsReport = {
      date: '2026-11-29T00:00:00.000Z',
      node: 'v20',
      kernel: '6',
      valgrind: 'valgrind-3.19.0',
      warmup: 5,
      requests: 10,
      windows: 3,
      rows: [row('nginx', 50_000), row('http-proxy', 400_000), row('node floor (HTTP, llhttp both ways)', 100_000), row('gatehouse (anonymous, transparent)', 200_000), row('gatehouse (oidc, cached token)', 210_000), row('gatehouse (embedded AS)', null, 'failed')],
    };
    const text = instructionsMarkdown(report);
    // Least windows without the collector: 210,000 - 300 against 200,000 - 300.
    assert.match(text, /\| gatehouse \(oidc, cached token\) \| 210,000 \| 100 \| 210k–252k \| 4\.20 \| 0\.53 \| 2\.10 \| 1\.05 \| 1\.05 \|/);
    assert.match(text, /\| gatehouse \(embedded AS\) \| failed: check request: HTTP 401 \| – \| – \| – \| – \| – \| – \| – \|/);
    assert.match(text, /the kernel is not counted/);
  });
});
