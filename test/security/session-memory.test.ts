/**
 * What one logged-in user can make a gateway process hold with sessions: a
 * `gatehouse vmcp serve` process (aggregated, two SDK servers as child processes, inline OIDC)
 * takes 60 initializes of one principal, each declaring 3.5 MiB of capabilities (under the
 * default 4 MiB body cap). Each is refused with -32602 naming the limit, before any backend is
 * asked; the process stays up, another principal is served throughout, and its RSS before and
 * after is printed. Run once with the default heap and once with `--max-old-space-size=384`,
 * the heap such a process crashed in when sessions kept whatever the client declared.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { SpawnedFixture } from '../fixtures/processes.ts';
import { serveCli } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { RESOURCE, startBackendChild } from '../helpers/hostile.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { paddedCapabilities } from '../helpers/session-state.ts';

const MiB = 1024 * 1024;
const SESSIONS = 60;
const DECLARED = 3.5 * MiB;

/** Resident and peak resident memory of a process, from /proc (Linux). */
async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

const mib = (n: number): string => (n / MiB).toFixed(1);

describe('a gateway process: one principal opening 60 sessions that declare 3.5 MiB of capabilities', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  let issuer: KeyIssuer;
  let backends: SpawnedFixture[];
  let file: string;

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    backends = await Promise.all(['alpha', 'beta'].map(startBackendChild));
    file = await writeConfig(
      vmcpYaml({
        backends: [{ name: 'alpha', url: backends[0]!.url }, { name: 'beta', url: backends[1]!.url }],
        incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
        config: 'operational: {failureHandling: {healthCheckInterval: 0s}}',
      }),
    );
  });
  after(async () => {
    await Promise.all(backends.map((b) => b.kill()));
    await issuer.close();
  });

  for (const heapMiB of [null, 384]) {
    const label = heapMiB === null ? 'the default heap' : `--max-old-space-size=${heapMiB}`;
    it(`with ${label}: every such initialize is refused naming the limit, the process stays up and serves another principal`, { timeout: 180_000 }, async () => {
      const served = await serveCli('vmcp', file, [], heapMiB === null ? [] : [`--max-old-space-size=${heapMiB}`]);
      try {
        const pid = served.child.pid!;
        const url = served.url;
        const alice = `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub: 'alice' }))}`;
        const bob = `Bearer ${await issuer.mint(issuer.claims(RESOURCE, { sub: 'bob' }))}`;
        const headers = (authorization: string, session?: string): Record<string, string> => ({
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization,
          ...(session === undefined ? {} : { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }),
        });
        const initialize = (capabilities: unknown, id: number): string =>
          JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'memory-test', version: '1' } } });
        const bobInit = await fetch(url, { method: 'POST', headers: headers(bob), body: initialize({}, 1) });
        assert.equal(bobInit.status, 200, await bobInit.text());
        const bobSession = bobInit.headers.get('mcp-session-id')!;
        const bobLists = async (): Promise<number> => {
          const res = await fetch(url, { method: 'POST', headers: headers(bob, bobSession), body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' });
          await res.text();
          return res.status;
        };
        assert.equal(await bobLists(), 200);
        await new Promise((r) => setTimeout(r, 500));
        const before = await memoryOf(pid);

        const body = initialize(paddedCapabilities(DECLARED, 32), 3);
        const answers: { status: number; text: string }[] = [];
        for (let i = 0; i < SESSIONS && served.child.exitCode === null; i++) {
          try {
            const res = await fetch(url, { method: 'POST', headers: headers(alice), body });
            answers.push({ status: res.status, text: (await res.text()).slice(0, 400) });
          } catch (err) {
            answers.push({ status: 0, text: String(err) });
            break;
          }
        }
        await new Promise((r) => setTimeout(r, 1_000));
        const alive = served.child.exitCode === null && served.child.signalCode === null;
        const afterRun = alive ? await memoryOf(pid) : null;
        const statuses = answers.reduce<Record<string, number>>((tally, a) => ({ ...tally, [a.status]: (tally[a.status] ?? 0) + 1 }), {});
        console.log(
          `gateway RSS (${label}), ${answers.length} initializes of one principal declaring ${mib(body.length)} MiB each: ${mib(before.rss)} MiB before, ` +
            (afterRun === null ? `the process DIED (exit ${served.child.exitCode}, signal ${served.child.signalCode})` : `${mib(afterRun.rss)} MiB after, peak ${mib(afterRun.peak)} MiB`) +
            `; statuses ${JSON.stringify(statuses)}`,
        );
        assert.ok(alive, 'the gateway process is still running');
        assert.equal(answers.length, SESSIONS);
        for (const answer of answers) {
          assert.equal(answer.status, 400, answer.text);
          assert.match(answer.text, /"code":-32602/);
          assert.match(answer.text, /capabilities.*session\.maxSessionSize/);
        }
        assert.equal(await bobLists(), 200, 'another principal is served throughout');
      } finally {
        await served.stop();
      }
    });
  }
});
