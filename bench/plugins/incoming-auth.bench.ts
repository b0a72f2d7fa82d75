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
 * The issuer is the loopback discovery + JWKS server of issuer.ts (closed after the last task).
 */
import { exportJWK, generateKeyPair } from 'jose';
import type { Bench } from 'tinybench';
import type { Context } from '../../core/plugin-api/context.ts';
import { createLogger } from '../../core/observe/log.ts';
import { oidcAuth } from '../../plugins/incoming-auth/oidc.ts';
import { tokenCacheKey } from '../../plugins/incoming-auth/token-cache.ts';
import { createTokenValidator } from '../../plugins/incoming-auth/validator.ts';
import { AUDIENCE, startBenchIssuer } from './issuer.ts';

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

export default async function register(bench: Bench): Promise<void> {
  const log = createLogger('silent');
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const tokenIssuer = await startBenchIssuer('ES256', privateKey, await exportJWK(publicKey));
  const issuer = tokenIssuer.url;

  // --- cache hit ------------------------------------------------------------------------------
  const cached = await createTokenValidator({ issuer, audience: AUDIENCE }, log);
  const token = await tokenIssuer.mint('hit');
  await cached.verify(token);
  if (cached.verify(token) instanceof Promise) throw new Error('expected a synchronous cache hit');

  // The whole authenticate hook on a hit, with the fields of a Context it reads.
  const plugin = await oidcAuth.create(
    { resourceUrl: AUDIENCE, oidc: { type: 'inline', issuer, clientId: 'gatehouse', audience: AUDIENCE, clientSecret: null, jwksAllowPrivateIP: false } },
    { log, metrics: undefined as never, mcpPath: '/mcp', backends: [], configDir: '.', origin: {}, setAuthChallenge: () => undefined },
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
          tokenIssuer.close();
        },
      },
    );
}
