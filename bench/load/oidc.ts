/**
 * The "gatehouse (oidc, cached token)" row: the gateway with `incomingAuth.type: oidc` in front
 * of the same backend, every request carrying one valid bearer JWT. The first request verifies
 * it (discovery, JWKS, signature); every measured request is a verified-token cache hit, so the
 * row measures what incoming auth costs on the hot path (compare its CPU µs/request with the
 * anonymous row of the same run; target ≤ 1.1×).
 *
 * The issuer is a minimal discovery + JWKS server in the harness process (not counted: only the
 * gateway's process tree is), on loopback, with an ES256 key minted here.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { startGatehouse, vmcpConfig, type GatehouseConfigContext } from './gatehouse.ts';
import type { Row } from './target.ts';

const AUDIENCE = 'gatehouse-bench';

function oidcConfig(issuer: string) {
  return (ctx: GatehouseConfigContext): string =>
    vmcpConfig(
      ctx,
      `    type: oidc
    oidcConfig:
      type: inline
      inline: {issuer: "${issuer}", clientId: bench, audience: ${AUDIENCE}}
`,
    );
}

/** A loopback issuer serving discovery and JWKS for one ES256 key; returns it with a token for the gateway. */
async function startIssuer(): Promise<{ issuer: string; server: Server; token: string }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'ES256', use: 'sig' };
  let issuer = '';
  const server = createServer((req, res) => {
    const doc = req.url === '/jwks' ? { keys: [jwk] } : { issuer, jwks_uri: `${issuer}/jwks` };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = await new SignJWT({ scope: 'mcp:tools', client_id: 'bench' })
    .setProtectedHeader({ alg: 'ES256', kid: 'bench', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setSubject('bench-user')
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(privateKey);
  return { issuer, server, token };
}

export function oidcRow(): Row {
  return {
    name: 'gatehouse (oidc, cached token)',
    role: 'subject',
    async start(ctx) {
      const { issuer, server, token } = await startIssuer();
      const closeIssuer = (): Promise<void> => new Promise((resolve) => server.close(() => resolve()));
      try {
        const target = await startGatehouse(ctx, { label: 'oidc', config: oidcConfig(issuer) });
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
