/**
 * An MCP SDK client's OAuth state (`OAuthClientProvider`), with a headless browser for the login:
 * the SDK registers, builds the authorization URL with PKCE and `resource`, and this walks it to
 * the redirect URI, answering the gateway's consent page and, with `fill`, a provider's login form.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { Browser, type VisitOptions } from './browser.ts';

export class HeadlessOAuthProvider implements OAuthClientProvider {
  readonly browser = new Browser();
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** Where the login sent the browser back (the code is in it). */
  landed: URL | null = null;
  readonly #redirect: string;
  readonly #visit: VisitOptions;

  constructor(redirect: string, visit: VisitOptions = {}) {
    this.#redirect = redirect;
    this.#visit = visit;
  }

  get redirectUrl(): string {
    return this.#redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'sdk test', redirect_uris: [this.#redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.client = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL): Promise<void> {
    const visit = await this.browser.visit(url.href, (at) => at.href.startsWith(this.#redirect), this.#visit);
    this.landed = visit.url;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
}
