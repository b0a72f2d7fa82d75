/** A failure of a backend's transport (a connection, a child process, an SSE stream), with a code the gateway maps to what the client is told (upstreams.ts, upstreamError). */
export class UpstreamError extends Error {
  readonly code: string;
  constructor(code: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'UpstreamError';
    this.code = code;
  }
}
