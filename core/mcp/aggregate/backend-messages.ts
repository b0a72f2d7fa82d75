/**
 * What a backend says to the session outside the answers the gateway waits for: a notification
 * that a list changed empties the session's cached list (wherever it arrives: a call's stream, a
 * fan-out call's, the backend's own stream), and the messages on a fan-out call's stream go to
 * the client's GET stream, if it has one.
 */
import type { JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import type { MessageSink } from './backend-link.ts';
import type { AggregatedSession } from './session.ts';

/** The side effects of what a backend says (list caches). */
export function observeBackend(session: AggregatedSession, message: JsonRpcMessage): void {
  if (!('method' in message) || 'id' in message) return;
  const entry = mcpMethod(message.method);
  if (entry?.kind === 'notification' && entry.list !== null) session.invalidate(entry.list);
}

/** Where the messages a backend sends on a fan-out call's stream go: observed, then to the client's GET stream. */
export function sinkFor(session: AggregatedSession | null, index: number): MessageSink {
  return (message) => {
    if (session === null) return;
    observeBackend(session, message);
    session.stream?.deliver(index, message);
  };
}
