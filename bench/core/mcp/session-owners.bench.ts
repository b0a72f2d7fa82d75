/**
 * The transparent session owner check (core/mcp/session-owners.ts) on the hot path of an
 * authenticated request: one lookup in the local LRU and two string comparisons, among 10,000
 * bindings. Next to it, the anonymous case (no principal: nothing looked up).
 */
import type { Bench } from 'tinybench';
import { Principal, type Context } from '../../../core/plugin-api/context.ts';
import { SessionOwners } from '../../../core/mcp/session-owners.ts';
import { createLogger } from '../../../core/observe/log.ts';

const owners = new SessionOwners({ maxSessions: 10_000, maxPerPrincipal: 100, ttlMs: 30 * 60_000, log: createLogger('silent') });
const ANSWER = ['content-type', 'text/event-stream', 'mcp-session-id', ''];
const contexts: Context[] = [];
for (let i = 0; i < 10_000; i++) {
  const principal = new Principal(`user-${i % 200}`, {}, null, 'https://idp.example.com');
  const id = `3f0c9a52-8d0e-4f0a-9a4e-${String(i).padStart(12, '0')}`;
  const ctx = { principal, head: { sessionId: undefined }, startedAt: 0, req: { method: 'POST' }, requestId: 'r', target: null } as unknown as Context;
  ANSWER[3] = id;
  owners.answered(ctx, 200, ANSWER);
  (ctx.head as { sessionId: string | undefined }).sessionId = id;
  contexts.push(ctx);
}
// The last 100 bindings of each user survive the per-principal bound: take contexts from them.
const owned = contexts.slice(-100);
const anonymous = { ...owned[0]!, principal: null } as unknown as Context;
const stranger = { ...owned[0]!, principal: new Principal('mallory', {}, null, 'https://idp.example.com') } as unknown as Context;

export let verdict: unknown = null;
let i = 0;

export default function register(bench: Bench): void {
  bench
    .add('session-owners: check, the owner (10,000 bindings)', () => {
      verdict = owners.check(owned[i++ % owned.length]!);
    })
    .add('session-owners: check, another principal (404)', () => {
      verdict = owners.check(stranger);
    })
    .add('session-owners: check, anonymous (nothing looked up)', () => {
      verdict = owners.check(anonymous);
    });
}
