/**
 * The one "a value or a promise of it" helper (fastify's wrap-thenable plays this part there).
 * Hooks, steps and handlers stay synchronous while they can, so a request whose hooks are all
 * synchronous meets no promise at all; the chain switches to a promise only from the first step
 * that returns one.
 */

export function isPromise(value: unknown): value is Promise<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as Promise<unknown>).then === 'function';
}

/** `next(value)` at once when `value` is not a promise, else once it resolves (a rejection passes through). */
export function then<T, R>(value: T | Promise<T>, next: (settled: T) => R | Promise<R>): R | Promise<R> {
  return isPromise(value) ? (value as Promise<T>).then(next) : next(value as T);
}
