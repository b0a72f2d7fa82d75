/**
 * A short reason for a failed outbound request: the deepest cause's message (undici wraps its
 * errors in "fetch failed", and the guard's or the socket's error is the cause). Its own file so
 * that the issuer thread (issuer-http-worker.ts), which loads as little as it can, and the main
 * thread's callers say a failure the same way.
 */
export function reasonOf(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current instanceof Error && current.cause !== undefined; depth++) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
