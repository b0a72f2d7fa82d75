/**
 * What a backend's message becomes on its way to the client of an aggregated session. Several
 * backends share one client, so a backend may speak only for itself:
 *
 *  - its requests (sampling, elicitation, roots) get ids that name it, so the client's answer
 *    finds it, and no backend can aim an answer at another (ids.ts);
 *  - its cancellations name its own requests the same way;
 *  - a response passes only where it answers the request the client sent on that very exchange
 *    (`answering`); anywhere else (another id, the GET stream, a fan-out call's stream) it is
 *    dropped, so a backend cannot answer, or forge, a request another backend is serving;
 *  - SSE data that is not a JSON-RPC message is dropped: the gateway is the MCP server here.
 */
import type { JsonRpcId, JsonRpcMessage } from '../../protocol/jsonrpc.ts';
import { parseMessage } from '../../protocol/jsonrpc.ts';
import { formatSseEvent, type SseEvent } from '../../protocol/sse.ts';
import { wrapRequestId } from './ids.ts';

/**
 * Which response an exchange may carry: the id of the client's request it answers; null for none
 * (a resumed stream lets its one response through by its ticket, routed.ts and resume-tickets.ts).
 */
export type Answering = JsonRpcId;

function answers(answering: Answering, id: JsonRpcId): boolean {
  return answering !== null && id === answering;
}

/** `message` from backend `index` as the client gets it; null when it must not reach the client. */
export function towardClient(index: number, message: JsonRpcMessage, answering: Answering): JsonRpcMessage | null {
  if (!('method' in message)) return answers(answering, message.id) ? message : null;
  if ('id' in message) return { ...message, id: wrapRequestId(index, message.id) };
  if (message.method === 'notifications/cancelled') {
    const requestId = message.params?.requestId;
    if (typeof requestId === 'string' || typeof requestId === 'number') {
      return { ...message, params: { ...message.params, requestId: wrapRequestId(index, requestId) } };
    }
  }
  return message;
}

/** The JSON-RPC message an SSE event carries; null when its data is not one. */
export function eventMessage(event: SseEvent): JsonRpcMessage | null {
  return event.data.length === 0 ? null : parseMessage(event.data);
}

/**
 * One SSE event from backend `index` as the client gets it: `eventId` replaces the backend's id
 * and its message is rewritten (towardClient); '' when nothing of it may pass.
 */
export function eventTowardClient(event: SseEvent, eventId: string | null, index: number, answering: Answering, message = eventMessage(event)): string {
  if (event.data.length === 0) {
    // A keep-alive comment passes as it is (proxies in front count on it); a priming event gets its new id.
    return event.id === null ? event.raw : formatSseEvent({ id: eventId, event: event.event, retry: event.retry, data: '' });
  }
  const rewritten = message === null ? null : towardClient(index, message, answering);
  return rewritten === null ? '' : formatSseEvent({ id: eventId, event: event.event, retry: event.retry, data: JSON.stringify(rewritten) });
}
