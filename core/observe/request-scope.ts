/**
 * Which request an event belongs to, for a subscriber that needs to know (the tracer: the span a
 * backend call is a child of). The server publishes `gatehouse:request:start` with `runStores`,
 * so a subscriber that binds `requestScope` to that channel finds the request's record in
 * `requestScope.getStore()` anywhere that request's work runs: its hooks, the backend calls it
 * makes, after its awaits.
 *
 * Nothing is bound until someone asks (`scopeRequests`): an AsyncLocalStorage in use costs every
 * promise of the process, and nobody should pay for it who does not need it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { requestStart } from './channels.ts';
import type { RequestRecord } from './request-record.ts';

export const requestScope = new AsyncLocalStorage<RequestRecord>();

let users = 0;

/** Binds `requestScope` to the requests' start for as long as the returned function is not called. */
export function scopeRequests(): () => void {
  if (users++ === 0) requestStart.bindStore(requestScope);
  let bound = true;
  return () => {
    if (!bound) return;
    bound = false;
    if (--users === 0) requestStart.unbindStore(requestScope);
  };
}

/** The record of the request whose work is running, or undefined (none, or nobody scoped requests). */
export function currentRequest(): RequestRecord | undefined {
  return users === 0 ? undefined : requestScope.getStore();
}

/**
 * Runs `fn` as work of `record`'s request: for a server that takes the request over a hop of its
 * own in the process (the authorization server's loopback listener), so that what it does (its
 * calls to identity providers) is still that request's. Without scoping, `fn` just runs.
 */
export function runInRequest<T>(record: RequestRecord, fn: () => T): T {
  return users === 0 ? fn() : requestScope.run(record, fn);
}
