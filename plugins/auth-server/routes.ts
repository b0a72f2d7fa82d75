/**
 * The embedded authorization server's paths, relative to its issuer, and its default scope.
 * Kept apart from provider.ts so that naming them does not load oidc-provider (which is loaded
 * only when an authorization server is configured).
 */

/** The provider's routes, relative to the issuer. */
export const ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  jwks: '/.well-known/jwks.json',
} as const;

/** The MCP endpoint's scope when incomingAuth names none. */
export const DEFAULT_SCOPES: readonly string[] = ['mcp'];

/** Where the provider sends the browser to log in (the upstream chain), relative to the issuer. */
export const INTERACTION_PATH = '/oauth/interaction';

/** Where every upstream provider sends the browser back, relative to the issuer. */
export const CALLBACK_PATH = '/oauth/callback';
