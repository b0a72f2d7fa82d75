/**
 * The openers a server uses by default: stdio backends as child processes (stdio/), legacy SSE
 * backends over the gateway's own HTTP client (sse/), on pools of their own that the transport
 * closes when it is done (it may outlive the generation whose pools the HTTP backends use).
 */
import { Pool } from '../pool.ts';
import { sseOpener } from '../sse/legacy-sse-channel.ts';
import { stdioOpener } from '../stdio/child.ts';
import { processWatchdog } from '../stdio/watchdog.ts';
import type { ChannelOpeners } from './channel-backends.ts';

/** SSE streams per backend at most (one per session), and requests (the POSTs of messages). */
const SSE_STREAMS = 256;
const SSE_REQUESTS = 64;

export const CHANNEL_OPENERS: ChannelOpeners = {
  stdio: (backend, config, log) => stdioOpener(backend.name, config, { maxLineBytes: backend.maxResponseBytes, log, watchdog: processWatchdog(log) }),
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
