/**
 * Errors the authorization server's stores throw inside the provider, as the provider answers
 * them: 503 `temporarily_unavailable` (its own error class, so its error handler shows it as it
 * is, never as a 500 `server_error`) with Retry-After on the request being handled.
 */
import requestContext from 'oidc-provider/lib/helpers/als.js';

export async function temporarilyUnavailable(description: string, retryAfterSeconds: number, cause?: unknown): Promise<Error> {
  const { errors } = await import('oidc-provider');
  const unavailable = new errors.TemporarilyUnavailable(description, cause === undefined ? undefined : { cause });
  Object.assign(unavailable, { status: 503, statusCode: 503, expose: true });
  (requestContext.getStore() as { set?(field: string, value: string): void } | undefined)?.set?.('retry-after', String(retryAfterSeconds));
  return unavailable;
}

/**
 * Registered clients: how many are kept, and which may make room. A client counts as used once
 * a user granted it access (a grant was stored for it); one never used and registered at least
 * `unusedGraceMs` ago (longer than a sign-in takes, so no client is dropped in the middle of its
 * first sign-in) is dropped, oldest first, when a registration finds the budget full.
 */
export const clientBudget = {
  /** Tests shorten it. */
  unusedGraceMs: 10 * 60_000,
};

/** A registration past `authServerConfig.maxClients` with no unused client to drop. */
export function clientsFull(max: number): Promise<Error> {
  const minutes = Math.ceil(clientBudget.unusedGraceMs / 60_000);
  return temporarilyUnavailable(
    `this server keeps at most ${max} registered clients (authServerConfig.maxClients), and none of them is an unused one registered over ${minutes} min ago that could make room; try again later`,
    60,
  );
}
