/**
 * A transparent session belongs to the principal that opened it, as an aggregated one does
 * (session-binding.test.ts): the backend assigns the id, the gateway binds it to the issuer and
 * subject its initialize was answered for, and any other principal presenting it — POST, GET
 * stream, DELETE — gets exactly the 404 of an unknown session, without the backend hearing of it,
 * while the owner's session carries on. Bindings are bounded per principal, and shared through
 * Redis by replicas (skipped with the reason when Redis does not answer, except under CI=true).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { Principal, type Context } from '../../core/plugin-api/context.ts';
import { SessionOwners } from '../../core/mcp/session-owners.ts';
import { createLogger } from '../../core/observe/log.ts';
import type { SdkServer } from '../fixtures/sdk-server.ts';
import { waitFor } from '../fixtures/processes.ts';
import { INITIALIZE, post, startTestGateway } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { RESOURCE, startOidcGateway, type OidcGateway } from '../incoming-auth/helpers/oidc-gateway.ts';
import { openLocalRedis, type LocalRedis } from '../store/helpers/local-redis.ts';

const UNKNOWN = 'no-such-session-0000000000000000000000';
const BODIES = [
  { id: 1, method: 'tools/list' },
  { id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
  { method: 'notifications/cancelled', params: { requestId: 1 } },
];

interface Answer {
  readonly status: number;
  readonly text: string;
}

const rpc = (url: string, authorization: string, session: string, body: object) =>
  post(url, JSON.stringify({ jsonrpc: '2.0', ...body }), { authorization, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });

async function stream(url: string, authorization: string, session: string): Promise<Answer> {
  const res = await fetch(url, { headers: { authorization, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', accept: 'text/event-stream' } });
  if (res.status === 200) {
    await res.body?.cancel();
    return { status: 200, text: '' };
  }
  return { status: res.status, text: await res.text() };
}

async function end(url: string, authorization: string, session: string): Promise<Answer> {
  const res = await fetch(url, { method: 'DELETE', headers: { authorization, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
  return { status: res.status, text: await res.text() };
}

/** Opens a session for `authorization`: its id (the backend's). */
async function open(url: string, authorization: string): Promise<string> {
  const init = await post(url, INITIALIZE, { authorization });
  assert.equal(init.status, 200, init.text);
  const id = init.headers.get('mcp-session-id')!;
  assert.equal((await rpc(url, authorization, id, { method: 'notifications/initialized' })).status, 202);
  return id;
}

/** What `authorization` gets for `session` is what it gets for a session that never existed, and the backend heard nothing. */
async function assertUnknownTo(url: string, backend: SdkServer, authorization: string, session: string): Promise<void> {
  const heard = backend.received.filter((r) => r.headers['mcp-session-id'] === session).length;
  for (const body of BODIES) {
    const [theirs, unknown] = [await rpc(url, authorization, session, body), await rpc(url, authorization, UNKNOWN, body)];
    assert.equal(theirs.status, 404, JSON.stringify(body));
    assert.deepEqual({ status: theirs.status, text: theirs.text }, { status: unknown.status, text: unknown.text }, `the same answer as an unknown session: ${JSON.stringify(body)}`);
    assert.match(theirs.text, /Session not found/);
  }
  const [theirStream, unknownStream] = [await stream(url, authorization, session), await stream(url, authorization, UNKNOWN)];
  assert.equal(theirStream.status, 404);
  assert.deepEqual(theirStream, unknownStream, 'GET: the same answer as an unknown session');
  const [theirEnd, unknownEnd] = [await end(url, authorization, session), await end(url, authorization, UNKNOWN)];
  assert.equal(theirEnd.status, 404);
  assert.deepEqual(theirEnd, unknownEnd, 'DELETE: the same answer as an unknown session');
  assert.equal(backend.received.filter((r) => r.headers['mcp-session-id'] === session).length, heard, 'nothing of it reached the backend');
}

describe('transparent sessions are bound to their principal', () => {
  let oidc: OidcGateway;
  let alice: string;
  let mallory: string;
  let session: string;

  before(async () => {
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }] });
    alice = await oidc.bearer('alice');
    mallory = await oidc.bearer('mallory');
    session = await open(oidc.gateway.url, alice);
  });
  after(() => oidc.stop());

  it('passes the backend\'s own session id through', () => {
    assert.ok(oidc.backends[0]!.sessionIds().includes(session));
  });

  it('answers another principal\'s POST, GET stream and DELETE with the 404 of an unknown session; the backend hears nothing', async () => {
    await assertUnknownTo(oidc.gateway.url, oidc.backends[0]!, mallory, session);
  });

  it('still serves the owner afterwards, stream included; the owner\'s DELETE ends the session and its binding', async () => {
    const url = oidc.gateway.url;
    const listed = await rpc(url, alice, session, BODIES[0]!);
    assert.equal(listed.status, 200, listed.text);
    assert.match(listed.text, /echo/);
    assert.equal((await stream(url, alice, session)).status, 200);
    assert.ok(oidc.backends[0]!.sessionIds().includes(session), 'the other principal\'s DELETE ended nothing');
    assert.equal((await end(url, alice, session)).status, 200);
    assert.ok(!oidc.backends[0]!.sessionIds().includes(session));
    const after = await rpc(url, alice, session, BODIES[0]!);
    assert.deepEqual({ status: after.status, text: after.text }, { status: 404, text: (await rpc(url, alice, UNKNOWN, BODIES[0]!)).text });
  });
});

describe('a transparent session binding names issuer and subject', () => {
  const ctx = (subject: string | null, issuer: string | null, method = 'POST'): Context =>
    ({ principal: subject === null ? null : new Principal(subject, {}, null, issuer), head: { sessionId: 'S' }, startedAt: 0, req: { method }, requestId: 'r', target: null }) as unknown as Context;
  const answer = ['Content-Type', 'application/json', 'Mcp-Session-Id', 'S'];

  it('binds the id an authenticated request was answered with, and refuses every other principal', () => {
    const owners = new SessionOwners({ maxSessions: 10, maxPerPrincipal: 10, ttlMs: 60_000, log: createLogger('silent') });
    /** The check's verdict, at once (no shared store to ask): undefined, or the refusal's code. */
    const verdict = (c: Context): string | undefined => {
      const refused = owners.check(c);
      assert.ok(!(refused instanceof Promise));
      return refused?.code;
    };
    assert.equal(verdict(ctx('alice', 'https://a.example')), 'session_not_found', 'unbound: unknown');
    assert.equal(owners.answered(ctx('alice', 'https://a.example'), 200, answer), null);
    assert.equal(verdict(ctx('alice', 'https://a.example')), undefined);
    assert.equal(verdict(ctx('alice', 'https://b.example')), 'session_not_found', 'the same subject from another issuer');
    assert.equal(verdict(ctx('alice', null)), 'session_not_found', 'the same subject without an issuer');
    assert.equal(verdict(ctx('alice2', 'https://a.example')), 'session_not_found');
    assert.equal(verdict(ctx(null, null)), undefined, 'anonymous requests are not checked');
    assert.equal(owners.answered(ctx('mallory', 'https://a.example'), 200, answer)?.code, 'backend_error', 'a backend that hands the id out again');
    assert.equal(owners.answered(ctx('alice', 'https://a.example', 'DELETE'), 404, []), null);
    assert.equal(verdict(ctx('alice', 'https://a.example')), undefined, 'a refused DELETE ends nothing');
    owners.answered(ctx('alice', 'https://a.example', 'DELETE'), 200, []);
    assert.equal(owners.size, 0);
  });
});

describe('a connection\'s last admission to a transparent session', () => {
  const ALICE = new Principal('alice', {}, null, 'https://a.example');
  const answer = (id: string): string[] => ['Mcp-Session-Id', id];
  const on = (socket: object, principal: Principal | null, id: string, startedAt: number, method = 'POST'): Context =>
    ({ principal, head: { sessionId: id }, startedAt, req: { method, socket }, requestId: 'r', target: null }) as unknown as Context;
  const verdict = (owners: SessionOwners, c: Context): string | undefined => {
    const refused = owners.check(c);
    assert.ok(!(refused instanceof Promise));
    return refused?.code;
  };

  it('stands only for the same session, the same principal object and a binding not ended since', () => {
    const owners = new SessionOwners({ maxSessions: 10, maxPerPrincipal: 2, ttlMs: 60_000, log: createLogger('silent') });
    const socket = {};
    // Times near now: the admission's moment is measured with performance.now().
    const t0 = performance.now();
    owners.answered(on(socket, ALICE, 'S1', t0 + 0), 200, answer('S1'));
    assert.equal(verdict(owners, on(socket, ALICE, 'S1', t0 + 1)), undefined, 'admitted (a lookup)');
    assert.equal(verdict(owners, on(socket, ALICE, 'S1', t0 + 2)), undefined, 'admitted again (the connection\'s admission)');
    const mallory = new Principal('mallory', {}, null, 'https://a.example');
    assert.equal(verdict(owners, on(socket, mallory, 'S1', t0 + 3)), 'session_not_found', 'another principal on the same connection');
    assert.equal(verdict(owners, on(socket, ALICE, 'S2', t0 + 4)), 'session_not_found', 'another session on the same connection');
    assert.equal(verdict(owners, on(socket, ALICE, 'S1', t0 + 5)), undefined);
    owners.answered(on({}, ALICE, 'S1', t0 + 6, 'DELETE'), 200, []);
    assert.equal(verdict(owners, on(socket, ALICE, 'S1', t0 + 7)), 'session_not_found', 'ended by a DELETE on another connection');
    owners.answered(on(socket, ALICE, 'S3', t0 + 8), 200, answer('S3'));
    assert.equal(verdict(owners, on(socket, ALICE, 'S3', t0 + 9)), undefined);
    owners.answered(on({}, ALICE, 'S4', t0 + 10), 200, answer('S4'));
    owners.answered(on({}, ALICE, 'S5', t0 + 11), 200, answer('S5'));
    assert.equal(verdict(owners, on(socket, ALICE, 'S3', t0 + 12)), 'session_not_found', 'ended as the principal\'s oldest past maxPerPrincipal');
  });

  it('is looked up again after a moment, so a binding that expired there is not served', async () => {
    // Real time (lru-cache reads performance.now): a time to live of 400 ms, admissions standing 100 ms.
    const owners = new SessionOwners({ maxSessions: 10, maxPerPrincipal: 10, ttlMs: 400, log: createLogger('silent') });
    const socket = {};
    owners.answered(on(socket, ALICE, 'S', performance.now()), 200, answer('S'));
    assert.equal(verdict(owners, on(socket, ALICE, 'S', performance.now())), undefined);
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(verdict(owners, on(socket, ALICE, 'S', performance.now())), 'session_not_found', 'expired: looked up again');
  });

  it('counts its moment from the lookup until the check, not from when a slow request began', async () => {
    // A request that began within the moment but whose body (or era probe) took longer than the
    // time to live reaches the check after the binding expired: it must be looked up, and refused.
    const owners = new SessionOwners({ maxSessions: 10, maxPerPrincipal: 10, ttlMs: 400, log: createLogger('silent') });
    const socket = {};
    const began = performance.now();
    owners.answered(on(socket, ALICE, 'S', began), 200, answer('S'));
    assert.equal(verdict(owners, on(socket, ALICE, 'S', began)), undefined);
    const slow = on(socket, ALICE, 'S', began + 1);
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(verdict(owners, slow), 'session_not_found', 'expired while the request was read');
  });
});

describe('transparent sessions per principal', () => {
  let oidc: OidcGateway;
  before(async () => {
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }], config: 'session: {maxSessionsPerPrincipal: 2}' });
  });
  after(() => oidc.stop());

  it('a principal past maxSessionsPerPrincipal loses its own oldest binding, and nobody else\'s', async () => {
    const url = oidc.gateway.url;
    const [alice, bob] = [await oidc.bearer('alice'), await oidc.bearer('bob')];
    const bobs = await open(url, bob);
    const first = await open(url, alice);
    const second = await open(url, alice);
    const third = await open(url, alice);
    assert.equal((await rpc(url, alice, first, BODIES[0]!)).status, 404, 'alice\'s oldest binding ended');
    for (const id of [second, third]) assert.equal((await rpc(url, alice, id, BODIES[0]!)).status, 200);
    assert.equal((await rpc(url, bob, bobs, BODIES[0]!)).status, 200, 'bob\'s session lives on');
  });
});

describe('transparent session bindings shared by replicas through Redis', () => {
  let redis: LocalRedis | null = null;
  let skip: string | null = null;
  let oidc: OidcGateway;
  let second: RunningVmcp;

  before(async () => {
    const opened = await openLocalRedis();
    if ('skip' in opened) {
      skip = opened.skip;
      return;
    }
    redis = opened;
    // A short TTL: a replica extends a binding it serves every quarter of it (1 s here).
    const storage = `session: {ttl: 4s, maxSessionsPerPrincipal: 2, storage: {type: redis, redis: {addr: "127.0.0.1:6379", keyPrefix: "${redis.keyPrefix}"}}}`;
    oidc = await startOidcGateway({ backends: [{ name: 'alpha' }], config: storage });
    second = await startTestGateway({
      backends: [{ name: 'alpha', url: oidc.backends[0]!.url }],
      incomingAuth: inlineOidcYaml({ issuer: oidc.issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
      config: storage,
    });
  });
  after(async () => {
    if (redis === null) return;
    await second.stop();
    await oidc.stop();
    await redis.cleanup();
  });

  it('a session opened through one replica is its principal\'s through the other, and nobody else\'s; the id is not a key name', async (t) => {
    if (skip !== null) return t.skip(skip);
    const [alice, mallory] = [await oidc.bearer('alice'), await oidc.bearer('mallory')];
    const session = await open(oidc.gateway.url, alice);
    await assertUnknownTo(second.url, oidc.backends[0]!, mallory, session);
    const listed = await rpc(second.url, alice, session, BODIES[0]!);
    assert.equal(listed.status, 200, listed.text);
    const keys = await redis!.admin.keys(`${redis!.keyPrefix}vmcp:transparent*`);
    assert.equal(keys.length, 2, `the binding and alice's index: ${keys.join(', ')}`);
    assert.ok(keys.every((key) => !key.includes(session)), 'session ids are not spelled out in key names');
  });

  it('the per-principal bound holds across replicas', async (t) => {
    if (skip !== null) return t.skip(skip);
    const bob = await oidc.bearer('bob');
    const first = await open(oidc.gateway.url, bob);
    await open(second.url, bob);
    await open(oidc.gateway.url, bob);
    // The second replica never saw the first session: it asks Redis, which ended it.
    assert.equal((await rpc(second.url, bob, first, BODIES[0]!)).status, 404);
  });

  it('the replica that opened a principal\'s sessions holds the bound too', async (t) => {
    if (skip !== null) return t.skip(skip);
    const dave = await oidc.bearer('dave');
    const first = await open(oidc.gateway.url, dave);
    await open(oidc.gateway.url, dave);
    await open(oidc.gateway.url, dave);
    assert.equal((await rpc(oidc.gateway.url, dave, first, BODIES[0]!)).status, 404, 'the opening replica still served the ended binding');
  });

  it('a binding another replica ended is ended on the replica serving it by its next extension', async (t) => {
    if (skip !== null) return t.skip(skip);
    const carol = await oidc.bearer('carol');
    const first = await open(oidc.gateway.url, carol);
    // Two more through the other replica: Redis ends carol's oldest.
    await open(second.url, carol);
    await open(second.url, carol);
    assert.equal((await rpc(second.url, carol, first, BODIES[0]!)).status, 404);
    // The first replica holds it still, until it next extends it (each second) and finds it gone.
    await waitFor(async () => (await rpc(oidc.gateway.url, carol, first, BODIES[0]!)).status === 404, 8_000, 100);
  });
});
