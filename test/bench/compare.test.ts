/**
 * The load benchmark's before/after (`BENCH_COMPARE`) as data: reading the variable, the twin
 * rows and their selection and order, and the ratios and table a compare run reports; and the
 * head and ratios of latest.md. Nothing is started or measured here (the harness itself is
 * exercised by running it: bench/README.md).
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { compareCheckoutFrom, fileSuffix, type Checkout } from '../../bench/load/checkout.ts';
import { computeRatios, markdownReport, markdownTable, twinTable, type LoadReport, type RowResult } from '../../bench/load/report.ts';
import { roundOrder, selectedRows, withTwins } from '../../bench/load/selection.ts';
import type { Row, RowContext } from '../../bench/load/target.ts';

const dir = mkdtempSync(join(tmpdir(), 'bench-compare-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('BENCH_COMPARE', () => {
  it('is unset when empty, and reads label=path', () => {
    assert.equal(compareCheckoutFrom(undefined), null);
    assert.equal(compareCheckoutFrom('  '), null);
    const checkout = compareCheckoutFrom(`before=${dir}`);
    assert.deepEqual(checkout, { root: dir, bin: join(dir, 'plugins/cli/bin.mjs'), label: 'before' });
  });

  it('keeps a path with an = in it whole', () => {
    const odd = join(dir, 'a=b');
    mkdirSync(odd);
    assert.equal(compareCheckoutFrom(`x=${odd}`)?.root, odd);
    assert.equal(compareCheckoutFrom(`x=${odd}`)?.label, 'x');
  });

  it('refuses a path that is not a directory, and a label that cannot name files and rows', () => {
    assert.throws(() => compareCheckoutFrom('old=/nonexistent/checkout'), /^Error: BENCH_COMPARE=old=\/nonexistent\/checkout: \/nonexistent\/checkout is not a directory/);
    assert.throws(() => compareCheckoutFrom(`two words=${dir}`), /the label "two words" may hold only/);
  });

  it('gives a twin files of its own, this checkout none', () => {
    assert.equal(fileSuffix(undefined), '');
    assert.equal(fileSuffix({ root: dir, bin: '', label: 'abc1234+modified' }), '@abc1234+modified');
  });
});

const other: Checkout = { root: '/elsewhere', bin: '/elsewhere/plugins/cli/bin.mjs', label: 'abc1234' };
const started: (RowContext | undefined)[] = [];
const row = (name: string, role: Row['role']): Row => ({
  name,
  role,
  start: async (ctx) => {
    started.push(ctx);
    return { url: 'http://127.0.0.1:1/mcp', pids: [], stop: async () => {} };
  },
});
const rows = [row('nginx', 'reference'), row('http-proxy', 'baseline'), row('gatehouse (anonymous)', 'subject'), row('gatehouse (oidc)', 'subject')];

describe('twin rows', () => {
  it('follow each gatehouse row, named after it, and start it on the other checkout', async () => {
    assert.deepEqual(withTwins(rows, null).map((r) => r.name), rows.map((r) => r.name));
    const all = withTwins(rows, other);
    assert.deepEqual(
      all.map((r) => [r.name, r.role, r.twinOf]),
      [
        ['nginx', 'reference', undefined],
        ['http-proxy', 'baseline', undefined],
        ['gatehouse (anonymous)', 'subject', undefined],
        ['gatehouse (anonymous) @ abc1234', 'subject', 'gatehouse (anonymous)'],
        ['gatehouse (oidc)', 'subject', undefined],
        ['gatehouse (oidc) @ abc1234', 'subject', 'gatehouse (oidc)'],
      ],
    );
    started.length = 0;
    await all[2]!.start({ backendUrl: 'b', tmpDir: 't' });
    await all[3]!.start({ backendUrl: 'b', tmpDir: 't' });
    assert.deepEqual(started, [{ backendUrl: 'b', tmpDir: 't' }, { backendUrl: 'b', tmpDir: 't', checkout: other }]);
  });

  it('are selected with their row by BENCH_ROWS', () => {
    const all = withTwins(rows, other);
    assert.deepEqual(selectedRows(all, 'nginx, OIDC').map((r) => r.name), ['nginx', 'gatehouse (oidc)', 'gatehouse (oidc) @ abc1234']);
    assert.deepEqual(selectedRows(all, '').length, 6);
  });

  it('swap places with their row every other round, as every row does with its neighbours', () => {
    const all = withTwins(rows, other);
    assert.deepEqual(roundOrder(all, 1), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(roundOrder(all, 2), [5, 4, 3, 2, 1, 0]);
    assert.deepEqual(roundOrder(all, 3), [0, 1, 2, 3, 4, 5]);
    assert.deepEqual(roundOrder(rows, 2), [3, 2, 1, 0]);
  });
});

/** A measured row with the given CPU µs/request per round (the first one reported). */
function measured(name: string, role: RowResult['role'], cpu: number[], twinOf?: string): RowResult {
  const m = { requests: 1000, seconds: 1, rps: 1e6 / cpu[0]!, latencyAvgMs: 1, p50Ms: 1, p75Ms: 1, p90Ms: 1, p99Ms: 2, errors: { non2xx: 0, connect: 0, read: 0, write: 0, timeout: 0 } };
  return {
    name,
    role,
    ...(twinOf === undefined ? {} : { twinOf }),
    status: 'ok',
    reason: null,
    measured: { ...m, cpuMicros: cpu[0]! * 1000, cpuMicrosPerRequest: cpu[0]!, cpuVsNginx: null, backendCpuMicrosPerRequest: 5, peakRssMiB: 100, foreignCpuPercent: 0 },
    rounds: cpu.map((c) => ({ status: 'ok', rps: 1e6 / c, cpuMicrosPerRequest: c, foreignCpuPercent: 0 })),
  };
}

describe('a compare run\'s report', () => {
  const results: RowResult[] = [
    measured('nginx', 'reference', [10, 10]),
    measured('http-proxy', 'baseline', [80, 80]),
    measured('gatehouse (anonymous)', 'subject', [30, 33]),
    measured('gatehouse (anonymous) @ abc1234', 'subject', [40, 30], 'gatehouse (anonymous)'),
    measured('gatehouse (oidc)', 'subject', [36, 36]),
    { name: 'gatehouse (oidc) @ abc1234', role: 'subject', twinOf: 'gatehouse (oidc)', status: 'unavailable', reason: 'unknown field "engine"\nmore', measured: null, rounds: [{ status: 'unavailable', rps: null, cpuMicrosPerRequest: null, foreignCpuPercent: null }] },
  ];
  const ratios = computeRatios(results);

  it('takes a twin\'s ratios to nginx and http-proxy like its row\'s', () => {
    const twin = ratios.subjects.find((s) => s.name === 'gatehouse (anonymous) @ abc1234');
    assert.equal(twin?.cpuVsNginx, 4);
    assert.equal(twin?.cpuVsBaseline, 0.5);
  });

  it('pairs each row with its twin: this ÷ that, of the reported rounds and round by round', () => {
    assert.deepEqual(ratios.twins, [
      { name: 'gatehouse (anonymous)', twin: 'gatehouse (anonymous) @ abc1234', cpuThisOverOther: 0.75, throughputThisOverOther: 1e6 / 30 / (1e6 / 40), cpuPerRound: [0.75, 1.1], flagged: false },
      { name: 'gatehouse (oidc)', twin: 'gatehouse (oidc) @ abc1234', cpuThisOverOther: null, throughputThisOverOther: null, cpuPerRound: [null], flagged: false },
    ]);
  });

  it('shows the twins in the table and the pairs after it; nothing of the kind without twins', () => {
    const report: LoadReport = {
      machine: { cpuModel: 'x', cores: 2, kernel: 'k', node: 'v20', nginx: null, wrk: null, date: 'd' },
      settings: { rounds: 2, durationSeconds: 1, warmupSeconds: 0, connections: 1, threads: 1, clockTicksPerSecond: 100, rowsFilter: null },
      compare: { this: { label: 'def5678', root: '/here' }, other: { label: 'abc1234', root: '/elsewhere' } },
      rows: results,
      ratios,
    };
    assert.match(markdownTable(results), /\| gatehouse \(oidc\) @ abc1234 \| — .*not available: unknown field "engine" \|/);
    const table = twinTable(report);
    assert.match(table, /\| gatehouse row \| def5678 \| abc1234 \| def5678 ÷ abc1234 \| per round \| req\/s def5678 ÷ abc1234 \|/);
    assert.match(table, /\| gatehouse \(anonymous\) \| 30\.0 \| 40\.0 \| 0\.75 \| 0\.75, 1\.10 \| 1\.33 \|/);
    assert.match(table, /\| gatehouse \(oidc\) \| 36\.0 \| — \| — \| — \| — \|/);
    assert.equal(twinTable({ ...report, ratios: computeRatios(results.filter((r) => r.twinOf === undefined)) }), '');
  });
});

describe('latest.md', () => {
  it('gives every row its CPU ×nginx and ×http-proxy of the run, under the date and the machine', () => {
    const rows = [measured('nginx', 'reference', [10]), measured('http-proxy', 'baseline', [80]), measured('gatehouse (anonymous)', 'subject', [20])];
    const report: LoadReport = {
      machine: { cpuModel: 'AMD EPYC', cores: 2, kernel: '6.1.0', node: 'v20.20.2', nginx: 'nginx/1.22.1', wrk: 'wrk 4.1.0', date: '2026-11-29T18:00:00.000Z' },
      settings: { rounds: 3, durationSeconds: 10, warmupSeconds: 3, connections: 32, threads: 1, clockTicksPerSecond: 100, rowsFilter: 'nginx,http-proxy,anonymous' },
      rows,
      ratios: computeRatios(rows),
    };
    const md = markdownReport(report);
    assert.match(md, /^# Load benchmark\n\n- Date: 2026-11-29T18:00:00\.000Z\n- Machine: AMD EPYC, 2 cores, Linux 6\.1\.0; Node v20\.20\.2; nginx\/1\.22\.1; wrk 4\.1\.0\n- Load: wrk -t1 -c32, 10 s measured after 3 s warm-up, median of 3 interleaved rounds; rows: BENCH_ROWS=nginx,http-proxy,anonymous\n/);
    assert.match(md, /\| target \| req\/s \| p50 ms \| p99 ms \| CPU µs\/req \| ×nginx CPU \| ×http-proxy CPU \|/);
    assert.match(md, /\| nginx \| [\d]+ \| [\d.]+ \| [\d.]+ \| 10\.0 \| 1\.00 \| 0\.13 \|/);
    assert.match(md, /\| gatehouse \(anonymous\) \| [\d]+ \| [\d.]+ \| [\d.]+ \| 20\.0 \| 2\.00 \| 0\.25 \|/);
  });
});
