/**
 * A token issuer whose keys the test controls: discovery and JWKS on loopback (http, or https
 * with a given certificate), request counters, key rotation, an outage switch, and token
 * minting with jose (including deliberately broken tokens).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export type SigningAlg = 'ES256' | 'RS256' | 'EdDSA';

export interface TestKey {
  readonly kid: string;
  readonly alg: SigningAlg;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export interface KeyIssuerOptions {
  /** Serve over https with this key and certificate (PEM). */
  tls?: { key: string; cert: string };
  /** Path of the JWKS (default `/jwks`); cluster mode uses `/openid/v1/jwks`. */
  jwksPath?: string;
  /** Discovery is served only at this well-known path (default both OIDC and RFC 8414). */
  discovery?: 'oidc' | 'oauth2' | 'both';
  /** Requests to discovery / JWKS must carry `Authorization: Bearer <this>` (like the API server). */
  requireBearer?: string;
  /** `issuer` in the discovery document (default: the server's own URL). */
  documentIssuer?: (url: string) => string;
  /** Extra members of the discovery document. */
  extraMetadata?: Record<string, unknown>;
}

export class KeyIssuer {
  readonly server: Server;
  url = '';
  readonly keys: TestKey[] = [];
  /** Keys that sign but are not published. */
  readonly unpublished: TestKey[] = [];
  jwksRequests = 0;
  discoveryRequests = 0;
  /** When true, every request is answered by destroying the socket (issuer unreachable). */
  down = false;
  cacheControl: string | null = null;
  /** The bearer tokens seen on requests (cluster-mode assertions). */
  readonly bearers: (string | undefined)[] = [];
  readonly #options: KeyIssuerOptions;
  #seq = 0;

  constructor(options: KeyIssuerOptions = {}) {
    this.#options = options;
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.#handle(req, res);
    this.server = options.tls ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler) : createHttpServer(handler);
  }

  static async start(options: KeyIssuerOptions = {}, host = '127.0.0.1'): Promise<KeyIssuer> {
    const issuer = new KeyIssuer(options);
    await new Promise<void>((resolve) => issuer.server.listen(0, host, resolve));
    const { port } = issuer.server.address() as AddressInfo;
    issuer.url = `${options.tls ? 'https' : 'http'}://${host}:${port}`;
    return issuer;
  }

  get jwksPath(): string {
    return this.#options.jwksPath ?? '/jwks';
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.down) {
      req.socket.destroy();
      return;
    }
    const path = new URL(req.url ?? '/', this.url).pathname;
    const auth = req.headers.authorization;
    this.bearers.push(auth?.replace(/^Bearer /, ''));
    if (this.#options.requireBearer !== undefined && auth !== `Bearer ${this.#options.requireBearer}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","code":401}');
      return;
    }
    const mode = this.#options.discovery ?? 'both';
    const isOidc = path === '/.well-known/openid-configuration' && mode !== 'oauth2';
    const isOauth = path === '/.well-known/oauth-authorization-server' && mode !== 'oidc';
    if (isOidc || isOauth) {
      this.discoveryRequests++;
      const issuer = this.#options.documentIssuer?.(this.url) ?? this.url;
      const doc = { issuer, jwks_uri: this.url + this.jwksPath, response_types_supported: ['id_token'], ...this.#options.extraMetadata };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
      return;
    }
    if (path === this.jwksPath) {
      this.jwksRequests++;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (this.cacheControl !== null) headers['cache-control'] = this.cacheControl;
      res.writeHead(200, headers).end(JSON.stringify({ keys: this.keys.map((k) => k.publicJwk) }));
      return;
    }
    res.writeHead(404).end();
  }

  /** Generates a key; published in the JWKS unless `publish` is false. */
  async addKey(alg: SigningAlg = 'ES256', publish = true, kid = `key-${++this.#seq}`): Promise<TestKey> {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
    const key: TestKey = { kid, alg, privateKey, publicJwk };
    (publish ? this.keys : this.unpublished).push(key);
    return key;
  }

  removeKey(kid: string): void {
    const i = this.keys.findIndex((k) => k.kid === kid);
    if (i !== -1) this.keys.splice(i, 1);
  }

  /** The claims of a valid token for `audience`, 10 minutes long. */
  claims(audience: string | string[], extra: JWTPayload = {}): JWTPayload {
    const now = Math.floor(Date.now() / 1000);
    return { iss: this.url, sub: 'user-1', aud: audience, iat: now, exp: now + 600, ...extra };
  }

  /** Signs `payload` with `key` (default: the first published key). */
  async mint(payload: JWTPayload, key: TestKey = this.keys[0]!, header: Record<string, unknown> = {}): Promise<string> {
    return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...header }).sign(key.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}

/** base64url of a JSON value or a string. */
export function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}
