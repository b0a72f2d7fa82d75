/**
 * The oidc plugin's authenticate hook, called directly with request contexts: the challenge it
 * sets, the principal it leaves, and the per-connection reuse of the last admitted bearer, which
 * must never admit anything the full path would refuse (another token, a repeated header, a
 * token in the query, an expired token).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Context } from '../../core/plugin-api/context.ts';
import type { AuthChallenge } from '../../core/base/errors.ts';
import { GatewayError } from '../../core/base/errors.ts';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import { oidcAuth } from '../../plugins/incoming-auth/oidc.ts';
import { b64url, KeyIssuer } from './helpers/key-issuer.ts';
import { AUDIENCE, Clock, log } from './helpers/validator.ts';

interface FakeRequest {
  ctx: Context;
  socket: object;
}

function request(socket: object, authorization: string | undefined, options: { count?: number; query?: string } = {}): FakeRequest {
  const ctx = {
    head: { authorization, authorizationCount: options.count ?? (authorization === undefined ? 0 : 1) },
    query: options.query ?? '',
    req: { socket },
    principal: null,
  } as unknown as Context;
  return { ctx, socket };
}

/** Runs the hook; the outcome (undefined when admitted) and whether it answered synchronously. */
async function authenticate(plugin: Plugin, req: FakeRequest): Promise<{ outcome: unknown; sync: boolean }> {
  const result = plugin.authenticate!(req.ctx);
  const sync = !(result instanceof Promise);
  return { outcome: await result, sync };
}

describe('oidc plugin: authenticate hook', () => {
  let issuer: KeyIssuer;
  let plugin: Plugin;
  let challenge: AuthChallenge | null = null;
  const clock = new Clock();

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    plugin = await oidcAuth.create(
      {
        resourceUrl: AUDIENCE,
        oidc: { type: 'inline', issuer: issuer.url, clientId: 'gatehouse', audience: AUDIENCE, clientSecret: null, jwksAllowPrivateIP: false },
        scopes: ['mcp:tools'],
        validator: { now: clock.now, clockToleranceSeconds: 0 },
      },
      { log, metrics: undefined as never, mcpPath: '/mcp', backends: [], configDir: '.', origin: {}, setAuthChallenge: (c) => void (challenge = c) },
    );
    await plugin.start?.();
  });
  after(async () => {
    await plugin.stop?.();
    await issuer.close();
  });

  const mint = (extra: Record<string, unknown> = {}) => {
    const now = Math.floor(clock.now() / 1000);
    return issuer.mint(issuer.claims(AUDIENCE, { iat: now, exp: now + 60, ...extra }));
  };

  it('sets the RFC 9728 challenge and serves the metadata routes', () => {
    assert.deepEqual(challenge, {
      realm: AUDIENCE,
      resourceMetadata: 'http://127.0.0.1:4483/.well-known/oauth-protected-resource/mcp',
      scopes: ['mcp:tools'],
    });
    assert.deepEqual([...new Set(plugin.routes!.map((r) => r.path))], ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']);
  });

  it('admits a valid token (asynchronously the first time) and leaves the principal with the raw token', async () => {
    const token = await mint({ sub: 'alice' });
    const req = request({}, `Bearer ${token}`);
    const { outcome, sync } = await authenticate(plugin, req);
    assert.equal(outcome, undefined);
    assert.equal(sync, false);
    assert.equal(req.ctx.principal?.subject, 'alice');
    assert.equal(req.ctx.principal?.issuer, issuer.url);
    assert.equal(req.ctx.principal?.token, token);
  });

  it('admits the same header on the same connection synchronously; a new connection uses the shared cache', async () => {
    const token = await mint({ sub: 'bob' });
    const socket = {};
    await authenticate(plugin, request(socket, `Bearer ${token}`));
    for (const s of [socket, {}]) {
      const req = request(s, `Bearer ${token}`);
      const { outcome, sync } = await authenticate(plugin, req);
      assert.equal(outcome, undefined);
      assert.ok(sync);
      assert.equal(req.ctx.principal?.subject, 'bob');
    }
  });

  it('gives the requests of one connection and one token one Principal; another token on it gets its own', async () => {
    const [carol, dave] = [await mint({ sub: 'carol' }), await mint({ sub: 'dave' })];
    const socket = {};
    const first = request(socket, `Bearer ${carol}`);
    await authenticate(plugin, first);
    const second = request(socket, `Bearer ${carol}`);
    await authenticate(plugin, second);
    assert.equal(second.ctx.principal, first.ctx.principal, 'the same immutable object');
    assert.ok(Object.isFrozen(first.ctx.principal?.claims));
    const other = request(socket, `Bearer ${dave}`);
    await authenticate(plugin, other);
    assert.equal(other.ctx.principal?.subject, 'dave');
    assert.equal(other.ctx.principal?.token, dave);
    const back = request(socket, `Bearer ${carol}`);
    await authenticate(plugin, back);
    assert.equal(back.ctx.principal?.subject, 'carol');
    assert.notEqual(back.ctx.principal, first.ctx.principal, 'admitted anew, as the shared cache\'s hit');
  });

  it('on a connection that already carried a valid token, refuses whatever the full path refuses', async () => {
    const token = await mint({ sub: 'carol' });
    const socket = {};
    await authenticate(plugin, request(socket, `Bearer ${token}`));
    const [header, , signature] = token.split('.');
    const tampered = `${header}.${b64url(issuer.claims(AUDIENCE, { sub: 'admin' }))}.${signature}`;
    const cases: [FakeRequest, string][] = [
      [request(socket, `Bearer ${tampered}`), 'invalid_token'],
      [request(socket, `Bearer ${token}`, { count: 2 }), 'invalid_request'],
      [request(socket, `Bearer ${token}`, { query: `access_token=${token}` }), 'invalid_request'],
      [request(socket, undefined), 'invalid_request'],
      [request(socket, `Basic ${token}`), 'invalid_request'],
    ];
    for (const [req, code] of cases) {
      const { outcome } = await authenticate(plugin, req);
      assert.ok(outcome instanceof GatewayError, code);
      assert.equal(outcome.code, code);
      assert.equal(req.ctx.principal, null);
    }
    // The refusals did not replace the connection's admitted bearer.
    assert.equal((await authenticate(plugin, request(socket, `Bearer ${token}`))).outcome, undefined);
  });

  it('never reuses a bearer past its exp, on the same connection or not', async () => {
    const token = await mint({ sub: 'dave' });
    const socket = {};
    await authenticate(plugin, request(socket, `Bearer ${token}`));
    clock.advance(60);
    for (const s of [socket, {}]) {
      const { outcome } = await authenticate(plugin, request(s, `Bearer ${token}`));
      assert.ok(outcome instanceof GatewayError);
      assert.equal(outcome.code, 'invalid_token');
      assert.match(outcome.description, /expired/);
    }
  });
});
