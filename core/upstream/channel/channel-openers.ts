/**
 * The openers a server uses by default: stdio backends as child processes (stdio/), legacy SSE
 * backends over the gateway's own HTTP client (sse/), on pools of their own that the transport
 * closes when it is done (it may outlive the generation whose pools the HTTP backends use).
 */
import { Pool } from '../pool.ts';
import { sseOpener } from '../sse/legacy-sse-channel.ts';
import type { ChannelOpeners } from './channel-backends.ts';
import { ChannelClosed, type ChannelEvents, type MessageChannel } from './channel.ts';

/** SSE streams per backend at most (one per session), and requests (the POSTs of messages). */
const SSE_STREAMS = 256;
const SSE_REQUESTS = 64;

function unavailable(kind: string) {
  return (events: ChannelEvents): MessageChannel => {
    queueMicrotask(() => events.closed(new ChannelClosed(`cannot be reached: ${kind} backends are not built yet`)));
    return { send: () => null, close: async () => {} };
  };
}

export const CHANNEL_OPENERS: ChannelOpeners = {
  stdio: () => unavailable('stdio'),
  sse: (backend, log) => {
    const origin = new URL(backend.origin);
    const stream = new Pool(origin, { connections: SSE_STREAMS, keepAliveMs: 30_000, connectTimeoutMs: 5_000, refuseWhenFull: true });
    const requests = new Pool(origin, { connections: SSE_REQUESTS, keepAliveMs: 30_000, connectTimeoutMs: 5_000 });
    return {
      opener: sseOpener(backend, { stream, requests }, log),
      close: () => {
        stream.close();
        requests.close();
      },
    };
  },
};
