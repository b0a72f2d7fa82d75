/**
 * A refresh whose rotation did not complete may be tried again with the same refresh token.
 *
 * oidc-provider rotates a refresh token by marking the old one used (the adapter's `consume`),
 * storing its successor, and then building the answer (the access token's claims read storage
 * too). A storage failure in between (a Redis failover: the client is told 503 with
 * Retry-After) left the client with a used token it never got a successor for, and its retry
 * was taken for a replay: the grant revoked, the login's upstream tokens dropped.
 *
 * The rule, kept by both adapters: a used refresh token still counts as unused while
 *  - its first use is less than `windowMs` old, and
 *  - no refresh of its grant has completed since (a completed refresh is one whose answer with
 *    the successor was ready to go out; `provider.ts` tells the adapter, `rotated`).
 * So a retry after a failed rotation rotates again; a replay after a rotation that succeeded is
 * a replay as before (invalid_grant, the grant revoked), and so is any use past the window.
 */
export const refreshRetry = {
  /** How long after its first use a refresh token whose rotation did not complete may be retried. Tests shorten it. */
  windowMs: 30_000,
};

/** An adapter that takes part (memory-adapter.ts, redis-adapter.ts). */
export interface RotationAware {
  /** A refresh of `grantId` completed: no used refresh token of the grant may be retried any more. */
  rotated(grantId: string): Promise<void>;
}
