/**
 * Incoming auth on the hot path (plugins/incoming-auth/):
 *
 * - the verified-token cache hit (target ≥ 1,000,000/s) and its first part (taking the slot),
 *   and the whole authenticate hook on a hit: on a keep-alive connection (the connection's last
 *   bearer, compared as a string) and on a new connection (header parse + cache hit + Principal).
 *
 * A full verification (a miss) next to raw jose is not here: WebCrypto verifies on the thread
 * pool, so tinybench's wall-clock figures for it swung by ±40–100 %. verify-cpu.ts (CPU time)
 * and verify-instructions.ts (callgrind) measure it.
 *
 * The issuer is a loopback discovery + JWKS server started here (unref'd; closed after the last task).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Bench } from 'tinybench';
import type { Context } from '../../core/context.ts';
import { createLogger } from '../../core/observe/log.ts';
import { oidcAuth } from '../../plugins/incoming-auth/oidc.ts';
import { tokenCacheKey } from '../../plugins/incoming-auth/token-cache.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';

const AUDIENCE = 'http://127.0.0.1:4483/mcp';

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

interface BenchKey {
  alg: 'ES256' | 'RS256';
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

async function benchKey(alg: 'ES256' | 'RS256'): Promise<BenchKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `bench-${alg}`;
  return { alg, kid, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

async function startIssuer(keys: BenchKey[]): Promise<{ url: string; server: Server }> {
  let url = '';
  const server = createServer((req, res) => {
    const body = req.url === '/jwks' ? { keys: keys.map((k) => k.jwk) } : { issuer: url, jwks_uri: `${url}/jwks` };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, server };
}

/** A realistic access token: RFC 9068 claims plus a few of the usual extras. */
function mint(issuer: string, key: BenchKey, jti: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'mcp:tools openid profile', client_id: 'mcp-client', email: 'alice@example.com', name: 'Alice Example', groups: ['eng', 'mcp-users'], jti })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setSubject('d3b07384-d9a0-4c3f-a1b2-7f5e9c0e4a11')
    .setAudience(AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(key.privateKey);
}

export default async function register(bench: Bench): Promise<void> {
  const log = createLogger('silent');
  const es = await benchKey('ES256');
  const { url: issuer, server } = await startIssuer([es]);

  // --- cache hit ------------------------------------------------------------------------------
  const cached = await createTokenValidator({ issuer, audience: AUDIENCE }, log);
  const token = await mint(issuer, es, 'hit');
  await cached.verify(token);
  if (cached.verify(token) instanceof Promise) throw new Error('expected a synchronous cache hit');

  // The whole authenticate hook on a hit, with the fields of a Context it reads.
  const plugin = await oidcAuth.create(
    { resourceUrl: AUDIENCE, oidc: { type: 'inline', issuer, clientId: 'gatehouse', audience: AUDIENCE, clientSecret: null, jwksAllowPrivateIP: false } },
    { log, metrics: undefined as never, mcpPath: '/mcp', backends: [], configDir: '.', setAuthChallenge: () => undefined },
  );
  await plugin.start?.();
  const authenticate = plugin.authenticate!;
  const head = { authorization: `Bearer ${token}`, authorizationCount: 1 };
  const keepAlive = { head, query: '', req: { socket: {} }, principal: null } as unknown as Context;
  await authenticate(keepAlive);
  const onNewConnection = (): Context => ({ head, query: '', req: { socket: {} }, principal: null }) as unknown as Context;

  bench
    .add(`verified-token cache hit: validator.verify (ES256 token, ${token.length} chars)`, () => {
      sink = cached.verify(token);
    })
    .add(`  part: tokenCacheKey = the last 32 chars of the signature (${token.length}-char token)`, () => {
      sink = tokenCacheKey(token);
    })
    .add('authenticate hook, keep-alive connection (its last bearer: string compare + Principal)', () => {
      sink = authenticate(keepAlive);
    })
    .add(
      'authenticate hook, new connection (header parse + cache hit + Principal)',
      () => {
        sink = authenticate(onNewConnection());
      },
      {
        afterAll() {
          // Runs after the warm-up too: closing is idempotent.
          cached.close();
          void plugin.stop?.();
          server.close();
        },
      },
    );
}
