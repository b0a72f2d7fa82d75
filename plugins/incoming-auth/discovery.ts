/**
 * Issuer metadata discovery: the OpenID Connect discovery document
 * (`<issuer>/.well-known/openid-configuration`), falling back to RFC 8414 authorization server
 * metadata (`<origin>/.well-known/oauth-authorization-server<issuer path>`). The document's
 * `issuer` must equal the configured one (OIDC Discovery §4.3, RFC 8414 §3.3) unless the issuer
 * is auto-detected (cluster mode), and its `jwks_uri` must obey the issuer URL rules.
 */
import { IssuerFetchError, type IssuerHttp } from './issuer-http.ts';

export interface IssuerMetadata {
  /** The issuer the tokens must name in `iss`. */
  readonly issuer: string;
  readonly jwksUri: string;
  readonly introspectionEndpoint: string | null;
  /** Where the document was found. */
  readonly source: string;
}

export interface DiscoveryOptions {
  /** Accept the document's `issuer` as it is (cluster mode: the service-account issuer is auto-detected). */
  readonly issuerFromDocument: boolean;
  /** Use this JWKS URL instead of the document's `jwks_uri`. */
  readonly jwksUri: string | null;
}

/** The discovery URLs to try for `issuer`, in order. */
function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/+$/, '');
  return [`${url.origin}${path}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${path}`];
}

function stringField(doc: Record<string, unknown>, name: string): string | null {
  const value = doc[name];
  return typeof value === 'string' && value !== '' ? value : null;
}

function metadataOf(json: unknown, source: string, issuer: string, http: IssuerHttp, options: DiscoveryOptions): IssuerMetadata {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new IssuerFetchError(`${source} is not a JSON object`);
  }
  const doc = json as Record<string, unknown>;
  const documented = stringField(doc, 'issuer');
  if (documented === null) throw new IssuerFetchError(`${source} has no "issuer"`);
  if (!options.issuerFromDocument && documented !== issuer) {
    throw new IssuerFetchError(`${source} names issuer "${documented}", not the configured "${issuer}"`);
  }
  const jwksUri = options.jwksUri ?? stringField(doc, 'jwks_uri');
  if (jwksUri === null) throw new IssuerFetchError(`${source} has no "jwks_uri"`);
  let parsed: URL;
  try {
    parsed = new URL(jwksUri);
  } catch {
    throw new IssuerFetchError(`${source}: "jwks_uri" is not a URL`);
  }
  http.checkUrl(parsed);
  return { issuer: documented, jwksUri, introspectionEndpoint: stringField(doc, 'introspection_endpoint'), source };
}

/** Fetches and checks the issuer's metadata. Throws IssuerFetchError naming every URL tried. */
export async function discoverIssuer(http: IssuerHttp, issuer: string, options: DiscoveryOptions): Promise<IssuerMetadata> {
  const failures: string[] = [];
  for (const url of discoveryUrls(issuer)) {
    let json: unknown;
    try {
      json = (await http.getJson(url)).json;
    } catch (err) {
      failures.push(err instanceof Error ? err.message : String(err));
      // Unreachable issuer: the fallback document lives on the same host; do not wait twice.
      if (err instanceof IssuerFetchError && err.status === null) break;
      continue;
    }
    return metadataOf(json, url, issuer, http, options);
  }
  throw new IssuerFetchError(`issuer metadata not found: ${failures.join('; ')}`);
}
