/**
 * Outgoing auth on the hot path (plugins/outgoing-auth/): what a request to a tokenExchange
 * backend costs when its exchanged token is cached.
 *
 * - the cache key (SHA-256 of the caller's token and the exchange's shape) and a cache hit;
 * - the whole prepareBackend hook on a hit (key, lookup, header set), with a caller's JWT of
 *   realistic size; the static strategies' hook (headerInjection) for comparison.
 *
 * A loopback STS answers the one exchange that fills the cache (closed after the last task).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Bench } from 'tinybench';
import { backendInfo } from '../../../core/plugin-api/backend.ts';
import type { TokenExchangeConfig } from '../../../core/config/vmcp-types.ts';
import { Principal, type Context } from '../../../core/plugin-api/context.ts';
import { OutgoingHeaders } from '../../../core/plugin-api/outgoing-headers.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { ExchangeCache, ExchangeMetrics, exchangeShape } from '../../../plugins/outgoing-auth/exchange-cache.ts';
import { staticCredentials } from '../../../plugins/outgoing-auth/static-credentials.ts';
import { tokenExchange } from '../../../plugins/outgoing-auth/token-exchange.ts';

export let sink: unknown;

const EXCHANGE: TokenExchangeConfig = {
  name: 'docs-exchange',
  type: 'tokenExchange',
  tokenUrl: 'http://127.0.0.1:9/token', // replaced by the loopback STS's
  clientId: 'gatehouse',
  clientSecret: { name: 'sts', key: 'secret', value: 'bench-secret' },
  audience: 'docs-api',
  scopes: ['docs.read'],
  subjectProviderName: null,
  subjectTokenType: 'urn:ietf:params:oauth:token-type:access_token',
  externalTokenHeaderName: null,
  timeoutMs: 10_000,
};

/** A caller's token the size of a typical ES256 access token (~700 bytes). */
const CALLER_TOKEN = 'eyJhbGciOiJFUzI1NiIsImtpZCI6ImJlbmNoIiwidHlwIjoiYXQrand0In0.' + 'x'.repeat(560) + '.' + 'y'.repeat(86);
const CACHE_CONFIG = { maxEntries: 10_000, defaultLifetimeMs: 60_000, expirySkewMs: 30_000 };

const HOST = { log: createLogger('silent'), metrics: null, mcpPath: '/mcp', backends: [], configDir: '.', setChallenge: () => undefined } as never;

export default async function register(bench: Bench): Promise<void> {
  const shape = exchangeShape(EXCHANGE);
  const cache = new ExchangeCache(CACHE_CONFIG, new ExchangeMetrics(null));
  const key = ExchangeCache.key(CALLER_TOKEN, shape);
  await cache.obtain(key, async () => ({ accessToken: 'exchanged-token', lifetimeMs: 3_600_000 }));

  bench.add('exchange cache key (SHA-256 of a 700-byte token + shape)', () => {
    sink = ExchangeCache.key(CALLER_TOKEN, shape);
  });
  bench.add('exchange cache hit (lookup only)', () => {
    sink = cache.get(key);
  });

  // The whole hook, through the plugin as the gateway compiles it, its cache filled by one exchange.
  const sts = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: 'exchanged-token', token_type: 'Bearer', issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', expires_in: 3600 }));
  });
  await new Promise<void>((resolve) => sts.listen(0, '127.0.0.1', resolve));
  const exchange = { ...EXCHANGE, tokenUrl: `http://127.0.0.1:${(sts.address() as AddressInfo).port}/token` };
  const plugin = await tokenExchange.create({ cache: CACHE_CONFIG, upstreamTokens: null }, HOST);
  const hook = plugin.prepareBackend!(backendInfo('docs', 'http://127.0.0.1:9/mcp', 30_000, exchange))!;
  const ctx = { principal: new Principal('bench-user', {}, CALLER_TOKEN) } as unknown as Context;
  const first = await hook(ctx, new OutgoingHeaders([]));
  if (first !== undefined || hook(ctx, new OutgoingHeaders([])) instanceof Promise) throw new Error('expected the exchange to fill the cache');
  bench.add('tokenExchange hook, cache hit (key + lookup + header)', () => {
    sink = hook(ctx, new OutgoingHeaders(['accept', 'application/json, text/event-stream', 'x-request-id', 'r1']));
  });

  const statics = await staticCredentials.create(undefined, HOST);
  const headerHook = statics.prepareBackend!(backendInfo('keyed', 'http://127.0.0.1:9/mcp', 30_000, { name: 'k', type: 'headerInjection', headerName: 'x-api-key', value: { name: 's', key: 'k', value: 'k-123' } }))!;
  bench.add(
    'headerInjection hook',
    () => {
      sink = headerHook(ctx, new OutgoingHeaders(['accept', 'application/json, text/event-stream', 'x-request-id', 'r1']));
    },
    {
      afterAll() {
        // Runs after the warm-up too, before other tasks' runs: only the STS goes (the cache stays full).
        sts.closeAllConnections();
        sts.close();
      },
    },
  );
}
