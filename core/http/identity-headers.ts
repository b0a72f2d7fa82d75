/**
 * Identity and proxy headers: what a proxy in front of a server writes to tell it who the caller
 * is (X-Forwarded-User, X-Auth-Request-Email, Remote-User, X-Goog-Authenticated-User-Email, a
 * client certificate...) or where the request came from and what it asked for (Forwarded,
 * X-Forwarded-For/-Host/-Proto, X-Real-IP, X-Original-URL, X-HTTP-Method-Override...). A backend
 * that trusts the proxy in front of it believes them. Sent by a client through the gateway, they
 * would arrive next to the credential the gateway injects, as if the gateway vouched for them: so
 * no backend gets them, in either mode, unless `spec.passthroughHeaders` names them.
 *
 * A name is the same header whether its words are joined by `-` or `_`: CGI (PHP, Apache),
 * WSGI and Rack hand a backend each header as a variable, both turned into `_`, so a client's
 * `X_Forwarded_For` or `Remote_User` is HTTP_X_FORWARDED_FOR or HTTP_REMOTE_USER there, as the
 * proxy's own header would be (nginx drops such names by default for that reason). The names
 * below are written with `-`, and a name with `_` is classified as its dashed spelling.
 *
 * The request loop (request-head.ts) looks each header name up once in its own table, which holds
 * IDENTITY_HEADERS; only a name that is not there is checked against the prefix families, and only
 * against the few prefixes that start like it (`x-f...` meets `x-forwarded-` alone), or, spelled
 * with `_`, as its dashed spelling.
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
  // Apache mod_auth_openidc (OIDC_CLAIM_*, OIDC_access_token: matched by their dashed spelling).
  'oidc-',
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

/** Whether a lower-case name without `_` belongs to a family of IDENTITY_PREFIXES (exact names are not checked here). */
function inIdentityFamily(name: string): boolean {
  const x = name.charCodeAt(0) === 120 && name.charCodeAt(1) === 45; // "x-"
  const prefixes = (x ? X_BUCKETS : OTHER_BUCKETS)[name.charCodeAt(x ? 2 : 0)];
  if (prefixes === undefined) return false;
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i]!)) return true;
  return false;
}

const EXACT = new Set(IDENTITY_HEADERS);

/**
 * Whether a lower-case name that is not one of IDENTITY_HEADERS as written is an identity or
 * proxy header: by its family, or, spelled with `_`, as its dashed spelling (exact or by family).
 */
export function isIdentityBeyondExact(name: string): boolean {
  return name.indexOf('_') === -1 ? inIdentityFamily(name) : isIdentityHeader(name.replaceAll('_', '-'));
}

/** Whether a lower-case header name is an identity or proxy header (exact or by family, in either spelling). */
export function isIdentityHeader(name: string): boolean {
  return EXACT.has(name) || isIdentityBeyondExact(name);
}
