/**
 * The rate limits of `tools/call` (core/mcp/rate-limits.ts) on memory buckets: which buckets a
 * call takes from (per principal, per anonymous address, per OAuth client, per tool), what is not
 * counted, the refusal's answers, the metric by bucket kind, and keys a hostile identity cannot
 * bend (CR/LF, 100 KiB subjects, issuer/subject splits).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBuckets, type BucketLimit } from '../../core/base/token-bucket.ts';
import type { RateLimitConfig } from '../../core/config/rate-limiting.ts';
import { MAX_KEY_CHARS, RateLimits, rateLimitedError, rateLimitedResponse, type RateLimited } from '../../core/mcp/rate-limits.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { Principal, type Context } from '../../core/plugin-api/context.ts';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';

const minute = (maxTokens: number) => ({ maxTokens, refillPeriodMs: 60_000 });
const none: RateLimitConfig = { shared: null, perUser: null, perClient: null, tools: [], workloads: [] };

/** What check() reads of a request: its principal and its address. */
function caller(subject: string | null, options: { issuer?: string; address?: string; claims?: Record<string, unknown> } = {}): Context {
  const principal = subject === null ? null : new Principal(subject, options.claims ?? {}, null, options.issuer ?? 'https://idp.example');
  return { principal, clientAddress: options.address ?? '10.0.0.1' } as unknown as Context;
}

let nextId = 0;
const call = (name: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params: { name, arguments: {} } });

function limits(config: Partial<RateLimitConfig>, metrics = new GatewayMetrics({ processMetrics: false })): RateLimits {
  const made = RateLimits.of({ ...none, ...config }, new TokenBuckets(null), metrics);
  assert.ok(made !== null);
  return made;
}

function allowed(rl: RateLimits, ctx: Context, message: JsonRpcMessage, n: number): number {
  let passed = 0;
  for (let i = 0; i < n; i++) if (rl.check(ctx, message, 'github') === null) passed++;
  return passed;
}

/** Buckets that only record the keys they are asked for. */
function recorder(): { buckets: TokenBuckets; keys: string[] } {
  const keys: string[] = [];
  const buckets = { take: (asked: readonly string[], _limits: readonly BucketLimit[]) => (keys.push(...asked), null) } as unknown as TokenBuckets;
  return { buckets, keys };
}

describe('rate limits of tools/call', () => {
  it('are null when nothing is configured: the request path asks nothing', () => {
    assert.equal(RateLimits.of(null, new TokenBuckets(null), new GatewayMetrics({ processMetrics: false })), null);
  });

  it('perUser: each principal its own bucket, anonymous callers one per address', () => {
    const rl = limits({ perUser: minute(3) });
    assert.equal(allowed(rl, caller('alice'), call('x'), 5), 3);
    assert.equal(allowed(rl, caller('bob'), call('x'), 5), 3);
    assert.equal(allowed(rl, caller('alice', { issuer: 'https://other.example' }), call('x'), 5), 3, 'the same sub at another issuer is someone else');
    assert.equal(allowed(rl, caller(null, { address: '10.0.0.7' }), call('x'), 5), 3);
    assert.equal(allowed(rl, caller(null, { address: '10.0.0.8' }), call('x'), 5), 3);
    // An IPv6 client by its /64: new addresses in one prefix share its bucket.
    assert.equal(allowed(rl, caller(null, { address: '2001:db8:1:2::1' }), call('x'), 2) + allowed(rl, caller(null, { address: '2001:db8:1:2:ffff::9' }), call('x'), 3), 3);
  });

  it('keeps a principal\'s keys with its claims, but never lends them to another principal with the same claims object', () => {
    const rl = limits({ perUser: minute(2) });
    const shared = {};
    const alice = { principal: new Principal('alice', shared, null, 'https://idp.example'), clientAddress: '10.0.0.1' } as unknown as Context;
    const bob = { principal: new Principal('bob', shared, null, 'https://idp.example'), clientAddress: '10.0.0.1' } as unknown as Context;
    assert.equal(allowed(rl, alice, call('x'), 3), 2);
    assert.equal(allowed(rl, bob, call('x'), 3), 2);
    assert.equal(allowed(rl, alice, call('x'), 1), 0);
  });

  it('counts tools/call only: initialize, lists, pings, notifications and answers pass', () => {
    const rl = limits({ shared: minute(1) });
    const ctx = caller('alice');
    assert.equal(rl.check(ctx, call('x'), 'github'), null);
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 3, result: {} },
    ] as JsonRpcMessage[]) {
      assert.equal(rl.check(ctx, message, 'github'), null, JSON.stringify(message));
    }
    assert.ok(rl.check(ctx, call('x'), 'github') !== null);
  });

  it('per tool: shared for everyone, perUser per principal, other tools untouched', () => {
    const rl = limits({ tools: [{ name: 'deploy', shared: minute(3), perUser: minute(2) }] });
    assert.equal(allowed(rl, caller('alice'), call('deploy'), 5), 2);
    assert.equal(allowed(rl, caller('bob'), call('deploy'), 5), 1, 'the shared 3 are spent');
    assert.equal(allowed(rl, caller('carol'), call('search'), 50), 50);
  });

  it('perClient: one bucket per client_id (else azp); a token naming no client is not counted there', () => {
    const rl = limits({ perClient: minute(2) });
    assert.equal(allowed(rl, caller('alice', { claims: { client_id: 'cli' } }), call('x'), 3) + allowed(rl, caller('bob', { claims: { azp: 'cli' } }), call('x'), 3), 2);
    assert.equal(allowed(rl, caller('carol', { claims: { client_id: 'web' } }), call('x'), 3), 2);
    assert.equal(allowed(rl, caller('dave'), call('x'), 10), 10);
  });

  it('per backend (workloads): every tool of one backend, not the others\'', () => {
    const rl = limits({ workloads: [{ workload: 'github', shared: null, perUser: minute(2) }] });
    const alice = caller('alice');
    let passed = 0;
    for (const name of ['create_pr', 'search', 'list']) if (rl.check(alice, call(name), 'github') === null) passed++;
    assert.equal(passed, 2);
    assert.equal(allowed(rl, alice, call('x'), 1), 0, 'allowed() calls through github');
    assert.equal(rl.check(alice, call('search'), 'jira'), null);
    assert.equal(rl.check(caller('bob'), call('search'), 'github'), null);
  });

  it('a refused call spends nothing of the other buckets, and says when to come back', () => {
    const rl = limits({ perUser: minute(10), tools: [{ name: 'deploy', shared: null, perUser: minute(1) }] });
    const ctx = caller('alice');
    assert.equal(allowed(rl, ctx, call('deploy'), 5), 1);
    const refusal = rl.check(ctx, call('deploy'), 'github') as RateLimited;
    assert.equal(refusal.retryAfterSeconds, 60);
    assert.equal(allowed(rl, ctx, call('search'), 20), 9, '10 less the one deploy that went through');
  });

  it('a batch is checked message by message', () => {
    const rl = limits({ perUser: minute(2) });
    const outcomes = rl.checkBatch(caller('alice'), [call('a'), { jsonrpc: '2.0', id: 9, method: 'ping' }, call('b'), call('c')], 'github') as (RateLimited | null)[];
    assert.deepEqual(outcomes.map((o) => o !== null), [false, false, false, true]);
  });

  it('answers 429 with Retry-After on HTTP, and ToolHive\'s JSON-RPC error with retryAfterSeconds', () => {
    const error = rateLimitedError({ retryAfterSeconds: 7 });
    assert.equal(error.status, 429);
    assert.equal(error.headers?.['retry-after'], '7');
    assert.equal(error.rpcCode, 429);
    assert.deepEqual(rateLimitedResponse(4, { retryAfterSeconds: 7 }), { jsonrpc: '2.0', id: 4, error: { code: 429, message: 'Rate limit exceeded', data: { error: 'rate_limited', retryAfterSeconds: 7 } } });
  });

  it('counts refusals by bucket kind, never by caller', async () => {
    const metrics = new GatewayMetrics({ processMetrics: false });
    const rl = limits({ perUser: minute(1), tools: [{ name: 'deploy', shared: minute(1), perUser: null }] }, metrics);
    allowed(rl, caller('alice'), call('x'), 3);
    allowed(rl, caller('bob'), call('deploy'), 1);
    allowed(rl, caller('carol'), call('deploy'), 1);
    const text = await metrics.registry.metrics();
    assert.match(text, /gatehouse_rate_limited_total\{scope="perUser",target="server"\} 2/);
    assert.match(text, /gatehouse_rate_limited_total\{scope="shared",target="tool"\} 1/);
    assert.doesNotMatch(text, /alice|bob|carol/);
  });

  it('keys of hostile identities stay bounded and distinct', () => {
    const { buckets, keys } = recorder();
    const rl = RateLimits.of({ ...none, perUser: minute(5), perClient: minute(5) }, buckets, new GatewayMetrics({ processMetrics: false }))!;
    const huge = 'x'.repeat(100 * 1024);
    rl.check(caller(`${huge}\r\nSET evil 1\r\n`, { claims: { client_id: huge } }), call('x'), 'github');
    rl.check(caller(`${huge}\r\nSET evil 2\r\n`), call('x'), 'github');
    assert.ok(keys.every((key) => key.length <= MAX_KEY_CHARS + 4), keys.map((k) => k.length).join(' '));
    assert.notEqual(keys[0], keys[2], 'two long subjects differing at the end are two keys');
    keys.length = 0;
    rl.check(caller('bc', { issuer: 'a' }), call('x'), 'github');
    rl.check(caller('c', { issuer: 'ab' }), call('x'), 'github');
    assert.notEqual(keys[0], keys[1], 'issuer "a" + sub "bc" is not issuer "ab" + sub "c"');
  });

  it('keeps its memory bounded under a flood of principals', () => {
    const buckets = new TokenBuckets(null, { maxKeys: 500 });
    const rl = RateLimits.of({ ...none, perUser: minute(5) }, buckets, new GatewayMetrics({ processMetrics: false }))!;
    for (let i = 0; i < 5_000; i++) rl.check(caller(`user-${i}`), call('x'), 'github');
    assert.equal(buckets.memory.size, 500);
  });
});
