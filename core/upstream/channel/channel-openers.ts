/**
 * The openers a server uses by default: stdio backends as child processes (stdio/child.ts), legacy
 * SSE backends over the gateway's own HTTP client (sse/).
 */
import type { ChannelOpeners } from './channel-backends.ts';
import { ChannelClosed, type ChannelEvents, type MessageChannel } from './channel.ts';

function unavailable(kind: string) {
  return (events: ChannelEvents): MessageChannel => {
    queueMicrotask(() => events.closed(new ChannelClosed(`cannot be reached: ${kind} backends are not built yet`)));
    return { send: () => null, close: async () => {} };
  };
}

export const CHANNEL_OPENERS: ChannelOpeners = {
  stdio: () => unavailable('stdio'),
  sse: () => ({ opener: unavailable('sse'), close: () => {} }),
};
