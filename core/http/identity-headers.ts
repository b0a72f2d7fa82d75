/**
 * Identity and proxy headers: what a proxy in front of a server writes to tell it who the caller
 * is (X-Forwarded-User, X-Auth-Request-Email, Remote-User, X-Goog-Authenticated-User-Email, a
 * client certificate...) or where the request came from and what it asked for (Forwarded,
 * X-Forwarded-For/-Host/-Proto, X-Real-IP, X-Original-URL, X-HTTP-Method-Override...). A backend
 * that trusts the proxy in front of it believes them. Sent by a client through the gateway, they
 * would arrive next to the credential the gateway injects, as if the gateway vouched for them: so
 * no backend gets them, in either mode, unless `spec.passthroughHeaders` names them.
 *
 * The request loop (request-head.ts) looks each header name up once in its own table, which holds
 * IDENTITY_HEADERS; only a name that is not there is checked against the prefix families, and only
 * against the few prefixes that start like it (`x-f...` meets `x-forwarded-` alone).
 */

/** Exact names, lower case. */
export const IDENTITY_HEADERS: readonly string[] = [
  // The client's address and the request as the client sent it (RFC 7239; nginx, Akamai, Cloudflare, Fastly).
  'forwarded',
  'x-real-ip',
  'x-client-ip',
  'x-cluster-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'cf-connecting-ipv6',
  'fastly-client-ip',
  // Path and method rewrites a backend framework honours from its proxy (IIS, Symfony, Rails, Spring).
  'x-rewrite-url',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  // A client certificate a TLS-terminating proxy checked (nginx, Azure, GCP).
  'x-client-cert',
  'x-client-verify',
  'x-arr-clientcert',
  // Kong's OIDC and key-auth plugins.
  'x-userinfo',
  'x-access-token',
  'x-id-token',
  'x-credential-identifier',
  'x-anonymous-consumer',
];

/** Families, by prefix (lower case). */
export const IDENTITY_PREFIXES: readonly string[] = [
  // Every X-Forwarded-* (For, Host, Proto, Port, Prefix, User, Email, Groups, Access-Token,
  // Preferred-Username, Uri, Method, Client-Cert of Envoy and Traefik...).
  'x-forwarded-',
  // oauth2-proxy's X-Auth-Request-*, Keycloak gatekeeper's X-Auth-Userid/-Roles/-Token...
  'x-auth-',
  // Kubernetes' authenticating proxy (X-Remote-User, -Group, -Extra-*), Authelia and Apache (Remote-User, -Groups, -Email).
  'x-remote-',
  'remote-',
  // Envoy's own headers (X-Envoy-External-Address, -Internal, -Original-Path...).
  'x-envoy-',
  // nginx auth_request and ingress-nginx (X-Original-URL, -URI, -Method, -Forwarded-For).
  'x-original-',
  'x-pomerium-',
  'x-authentik-',
  'x-vouch-',
  // Grafana's auth proxy convention (X-WEBAUTH-USER).
  'x-webauth-',
  // Google IAP, AWS ALB (OIDC, mTLS), Azure App Service, Cloudflare Access, Tailscale.
  'x-goog-authenticated-user-',
  'x-goog-iap-',
  'x-amzn-oidc-',
  'x-amzn-mtls-',
  'x-ms-client-principal',
  'x-ms-token-',
  'cf-access-',
  'tailscale-',
  // Kong's consumer (X-Consumer-ID, -Username, -Custom-ID).
  'x-consumer-',
  // Client certificates passed on by nginx and ingress-nginx.
  'x-ssl-client-',
  'ssl-client-',
  // Apache mod_auth_openidc (OIDC_CLAIM_*, OIDC_access_token).
  'oidc_',
];

/**
 * The prefixes by how a name starts: `x-` names by their third character, others by their first.
 * Character codes past 127 start no family.
 */
const X_BUCKETS: (readonly string[] | undefined)[] = new Array<readonly string[] | undefined>(128).fill(undefined);
const OTHER_BUCKETS: (readonly string[] | undefined)[] = new Array<readonly string[] | undefined>(128).fill(undefined);
for (const prefix of IDENTITY_PREFIXES) {
  const x = prefix.startsWith('x-');
  const buckets = x ? X_BUCKETS : OTHER_BUCKETS;
  const code = prefix.charCodeAt(x ? 2 : 0);
  buckets[code] = [...(buckets[code] ?? []), prefix];
}

/** Whether a lower-case name belongs to a family of IDENTITY_PREFIXES (exact names are not checked here). */
export function inIdentityFamily(name: string): boolean {
  const x = name.charCodeAt(0) === 120 && name.charCodeAt(1) === 45; // "x-"
  const prefixes = (x ? X_BUCKETS : OTHER_BUCKETS)[name.charCodeAt(x ? 2 : 0)];
  if (prefixes === undefined) return false;
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i]!)) return true;
  return false;
}

const EXACT = new Set(IDENTITY_HEADERS);

/** Whether a lower-case header name is an identity or proxy header (exact or by family). */
export function isIdentityHeader(name: string): boolean {
  return EXACT.has(name) || inIdentityFamily(name);
}
