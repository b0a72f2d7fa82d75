/**
 * The "gatehouse (oidc, cached token)" row: the gateway with `incomingAuth.type: oidc` in front
 * of the same backend, every request carrying one valid bearer JWT. The first request verifies
 * it (discovery, JWKS, signature); every measured request is a verified-token cache hit, so the
 * row measures what incoming auth costs on the hot path (compare its CPU µs/request with the
 * anonymous row of the same run; target ≤ 1.1×).
 *
 * The issuer is a minimal discovery + JWKS server in the harness process (not counted: only the
 * gateway's process tree is), on loopback, with an ES256 key minted here.
 *
 * The "gatehouse (oidc + tokenExchange, cached)" row adds outgoing auth: the backend's
 * credential is an RFC 8693 exchange of the caller's token at the same loopback server (its
 * `/token` answers every exchange with a one-hour token). The first request exchanges; every
 * measured one is an exchange-cache hit. Compare with the oidc row: target ≤ 1.05×.
 *
 * The "gatehouse (anonymous, carrying the oidc row's Authorization header)" row sends the oidc
 * row's very request (a token minted the same way) to the anonymous gateway, which reads the
 * header and drops it unverified: the same bytes in and out. The oidc row ÷ this row is what
 * checking the token costs; this row ÷ the anonymous one is what any proxy pays to read the
 * longer request.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { anonymousConfig, gatehouseRow, startGatehouse, vmcpConfig, type GatehouseConfigContext } from './gatehouse.ts';
import type { Row } from './target.ts';

const AUDIENCE = 'gatehouse-bench';

function oidcConfig(issuer: string, exchange: boolean) {
  const outgoing = exchange
    ? {
        ref: 'exchange',
        documents: `apiVersion: v1
kind: Secret
metadata: {name: sts}
stringData: {secret: bench-secret}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPExternalAuthConfig
metadata: {name: exchange}
spec:
  type: tokenExchange
  tokenExchange: {tokenUrl: "${issuer}/token", clientId: bench, clientSecretRef: {name: sts, key: secret}, audience: backend-api}`,
      }
    : null;
  return (ctx: GatehouseConfigContext): string =>
    vmcpConfig(
      ctx,
      `    type: oidc
    oidcConfig:
      type: inline
      inline: {issuer: "${issuer}", clientId: bench, audience: ${AUDIENCE}}
`,
      outgoing,
    );
}

/**
 * A loopback issuer serving discovery and JWKS for one ES256 key; returns it with a token for the
 * gateway (for `audience`, with `claims` besides the usual ones).
 */
export async function startIssuer(options: { audience?: string; claims?: Record<string, unknown> } = {}): Promise<{ issuer: string; server: Server; token: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256', use: 'sig' };
  let issuer = '';
  let exchanges = 0;
  const server = createServer((req, res) => {
    // An RFC 8693 token endpoint that exchanges anything (the row measures the gateway's cache).
    const exchanged = { access_token: `exchanged-${++exchanges}`, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 };
    const doc = req.url === '/jwks' ? { keys: [jwk] } : req.url === '/token' ? exchanged : { issuer, jwks_uri: `${issuer}/jwks` };
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = await new SignJWT({ scope: 'mcp:tools', client_id: 'bench', ...options.claims })
    .setProtectedHeader({ alg: 'ES256', kid: 'bench', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setSubject('bench-user')
    .setAudience(options.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  return { issuer, server, token };
}

export function oidcRow(exchange = false): Row {
  return {
    name: exchange ? 'gatehouse (oidc + tokenExchange, cached)' : 'gatehouse (oidc, cached token)',
    role: 'subject',
    async start(ctx) {
      const { issuer, server, token } = await startIssuer();
      const closeIssuer = (): Promise<void> => new Promise((resolve) => server.close(() => resolve()));
      try {
        const target = await startGatehouse(ctx, { label: exchange ? 'oidc-exchange' : 'oidc', config: oidcConfig(issuer, exchange) });
        return {
          ...target,
          headers: { authorization: `Bearer ${token}` },
          stop: async () => {
            await target.stop();
            await closeIssuer();
          },
        };
      } catch (err) {
        await closeIssuer();
        throw err;
      }
    },
  };
}

/** The anonymous gateway sent the oidc row's request, Authorization header and all (see above). */
export function bearerBytesRow(): Row {
  return gatehouseRow({
    name: "gatehouse (anonymous, carrying the oidc row's Authorization header)",
    label: 'anonymous-bearer-bytes',
    config: anonymousConfig,
    prepare: async () => {
      const { server, token } = await startIssuer();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return { authorization: `Bearer ${token}` };
    },
  });
}
