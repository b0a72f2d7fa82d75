/**
 * The example's backend: an MCP server whose one tool, `whoami`, says which credential the
 * gateway presented on the request that called it. A JWT is decoded (issuer, subject, audience,
 * lifetime; not verified: this is a window, not a guard); an opaque token is shown to the
 * identity provider's userinfo endpoint, which says whose it is. It never echoes a token.
 */
import { decodeJwt } from 'jose';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { serveMcp } from '../quickstart/demo-server.ts';

export interface Credential {
  /** `none`, `jwt` or `opaque`. */
  readonly kind: 'none' | 'jwt' | 'opaque';
  readonly issuer?: string;
  readonly subject?: string;
  readonly audience?: string | string[];
  readonly name?: string;
  readonly expiresInSeconds?: number;
  /** For an opaque token: what the identity provider's userinfo said of it. */
  readonly userinfo?: Record<string, unknown> | string;
}

/** What `authorization` (a request header's value) is; `userinfoUrl` is asked about opaque tokens. */
export async function describeCredential(authorization: string | undefined, userinfoUrl: string): Promise<Credential> {
  const token = /^Bearer (.+)$/i.exec(authorization ?? '')?.[1];
  if (token === undefined) return { kind: 'none' };
  try {
    const claims = decodeJwt(token);
    return {
      kind: 'jwt',
      ...(claims.iss === undefined ? {} : { issuer: claims.iss }),
      ...(claims.sub === undefined ? {} : { subject: claims.sub }),
      ...(claims.aud === undefined ? {} : { audience: claims.aud }),
      ...(typeof claims['name'] === 'string' ? { name: claims['name'] } : {}),
      ...(claims.exp === undefined ? {} : { expiresInSeconds: claims.exp - Math.floor(Date.now() / 1000) }),
    };
  } catch {
    const res = await fetch(userinfoUrl, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(3000) }).catch(() => null);
    const userinfo = res === null ? 'the identity provider did not answer' : res.ok ? ((await res.json()) as Record<string, unknown>) : `the identity provider refused it (${res.status})`;
    return { kind: 'opaque', userinfo };
  }
}

function whoamiServer(name: string, userinfoUrl: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('whoami', { description: `Which credential the gateway presented to ${name}` }, async (extra) => {
    const credential = await describeCredential(headerOf(extra.requestInfo?.headers ?? {}, 'authorization'), userinfoUrl);
    return { content: [{ type: 'text', text: `${name} received: ${JSON.stringify(credential, null, 2)}` }], structuredContent: { backend: name, credential } };
  });
  return server;
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Starts the `whoami` backend called `name` on 127.0.0.1:`port`. */
export function startWhoamiServer(name: string, port: number, userinfoUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  return serveMcp(() => whoamiServer(name, userinfoUrl), port);
}
