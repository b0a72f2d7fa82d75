/**
 * A gateway with the embedded authorization server, configured from YAML as a user writes it
 * (incoming auth oidc inline with the server's issuer, one upstream provider `corp`, a storage
 * block of the test's choosing), and the client's side of the flows: register, log in headless,
 * refresh, call the MCP endpoint with the token.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { RunningVmcp } from '../../../core/vmcp/virtual-mcp-server.ts';
import type { VmcpBuiltins } from '../../../plugins/cli/vmcp-builtins.ts';
import { startTestGateway, type TestBackend } from '../../helpers/gateway.ts';
import { captureLog, type CapturedLog } from '../../store/helpers/log.ts';
import { Browser } from './browser.ts';

export const REDIRECT = 'http://127.0.0.1:7779/callback';
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const HMAC = randomBytes(32).toString('base64url');

export interface YamlGatewayOptions {
  readonly port: number;
  /** The port in the issuer and resource URLs (default `port`): a load balancer's, for replicas. */
  readonly publicPort?: number;
  readonly backendUrl: string;
  readonly idpIssuer: string;
  /** The `storage:` block (flow style), e.g. `{type: redis, redis: {addr: "127.0.0.1:6379"}}`. */
  readonly storage: string;
  /** Extra Secret documents the storage block refers to. */
  readonly secrets?: string;
  /** Signing key and HMAC secret from a Secret (the same on every start), or the process's own. */
  readonly persistentKeys: boolean;
  /** The backend gets corp's token of the caller's login (MCPExternalAuthConfig upstreamInject). */
  readonly upstreamInject?: boolean;
  /** More backends of the group, and the documents (MCPExternalAuthConfigs, Secrets) they refer to. */
  readonly moreBackends?: readonly TestBackend[];
  readonly documents?: string;
  readonly log?: CapturedLog;
  /** The built-ins the gateway starts with, kept for its reloads. */
  readonly builtins?: VmcpBuiltins;
  /** Extra keys of `spec.config` (YAML flow style), e.g. a `telemetry` section. */
  readonly config?: string;
}

export async function startYamlGateway(o: YamlGatewayOptions): Promise<RunningVmcp> {
  const issuer = `http://127.0.0.1:${o.publicPort ?? o.port}`;
  const keys = o.persistentKeys ? '    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n' : '';
  return startTestGateway({
    port: o.port,
    log: (o.log ?? captureLog('info')).log,
    ...(o.builtins === undefined ? {} : { builtins: o.builtins }),
    ...(o.config === undefined ? {} : { config: o.config }),
    backends: [{ name: 'echo', url: o.backendUrl, ...(o.upstreamInject === true ? { externalAuthConfigRef: 'corp-inject' } : {}) }, ...(o.moreBackends ?? [])],
    incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${issuer}/mcp"}}`,
    spec:
      `  authServerConfig:\n    issuer: "${issuer}"\n${keys}` +
      `    upstreamProviders:\n      - {name: corp, type: oidc, oidcConfig: {issuerUrl: "${o.idpIssuer}", clientId: gatehouse, clientSecretRef: {name: corp, key: secret}}}\n` +
      `    storage: ${o.storage}`,
    documents:
      'apiVersion: v1\nkind: Secret\nmetadata: {name: corp}\nstringData: {secret: corp-secret}\n---\n' +
      `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  hmac: "${HMAC}"\n  signing: |\n${SIGNING_KEY.trim().split('\n').map((l) => `    ${l}`).join('\n')}\n` +
      (o.secrets === undefined ? '' : `---\n${o.secrets}`) +
      (o.upstreamInject === true ? '---\napiVersion: gatehouse.dev/v1alpha1\nkind: MCPExternalAuthConfig\nmetadata: {name: corp-inject}\nspec: {type: upstreamInject, upstreamInject: {providerName: corp}}\n' : '') +
      (o.documents === undefined ? '' : `---\n${o.documents}\n`),
  });
}

/** The client's side, against the server at `issuer`. */
export class ClientFlows {
  readonly #issuer: string;

  constructor(issuer: string) {
    this.#issuer = issuer;
  }

  async register(): Promise<string> {
    const res = await fetch(`${this.#issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    assert.equal(res.status, 201);
    return ((await res.json()) as { client_id: string }).client_id;
  }

  async login(clientId: string): Promise<{ access: string; refresh: string }> {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'r' });
    const visit = await new Browser().visit(`${this.#issuer}/oauth/authorize?${query}`, (url) => url.href.startsWith(REDIRECT));
    const code = visit.url.searchParams.get('code');
    assert.ok(code !== null, visit.trail.join('\n'));
    const res = await fetch(`${this.#issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: clientId, redirect_uri: REDIRECT, code_verifier: verifier }),
    });
    const body = (await res.json()) as { access_token: string; refresh_token: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    return { access: body.access_token, refresh: body.refresh_token };
  }

  async refresh(clientId: string, token: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${this.#issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: clientId }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** The status of an MCP initialize with the token. */
  async mcpStatus(access: string): Promise<number> {
    const res = await fetch(`${this.#issuer}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${access}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    await res.arrayBuffer();
    return res.status;
  }
}
