/**
 * HTTP on a raw socket, for what fetch and node:http refuse to send or hide when they read:
 * forged header bytes, a second Host, several requests in one write, the exact response head.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  /** Everything the server sent until it closed the connection (or the timeout). */
  readonly text: string;
  /** Status code of the first response, 0 when there was none. */
  readonly status: number;
  /** Header lines of the first response, as sent. */
  readonly headLines: string[];
  /** Body of the first response (everything after its head). */
  readonly body: string;
}

/** `host:port` of a URL. */
function endpointOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}

/** Whether `text` holds a whole first response with a Content-Length, or a first SSE event. */
function firstResponseComplete(text: string): boolean {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd === -1) return false;
  const head = text.slice(0, headEnd + 2);
  const body = text.slice(headEnd + 4);
  if (/\r\ncontent-type: *text\/event-stream/i.test(head)) return /\n\n/.test(body);
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  return length !== null && Buffer.byteLength(body, 'latin1') >= Number(length[1]);
}

/**
 * Writes `bytes` on a new connection and collects what comes back until the server closes it,
 * `timeoutMs` passes, or (with `firstResponse`) the first response with a Content-Length is
 * whole; then the socket is closed from this side.
 */
export function rawExchange(url: string, bytes: string | Buffer, timeoutMs = 3000, firstResponse = false): Promise<RawAnswer> {
  const { host, port } = endpointOf(url);
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (firstResponse && firstResponseComplete(Buffer.concat(chunks).toString('latin1'))) socket.destroy();
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (chunks.length === 0) reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const headEnd = text.indexOf('\r\n\r\n');
      const head = headEnd === -1 ? text : text.slice(0, headEnd);
      const [statusLine = '', ...headLines] = head.split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
      resolve({ text, status, headLines, body: headEnd === -1 ? '' : text.slice(headEnd + 4) });
    });
    socket.write(bytes);
  });
}

/**
 * A request's bytes: `headers` are written exactly as given (a repeated name is repeated), after
 * `host: <the URL's host>` unless they hold a host of their own.
 */
export function rawRequestBytes(method: string, url: string, headers: readonly (readonly [string, string])[], body = ''): string {
  const u = new URL(url);
  const lines = [`${method} ${u.pathname}${u.search} HTTP/1.1`];
  if (!headers.some(([name]) => name.toLowerCase() === 'host')) lines.push(`host: ${u.host}`);
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  if (body !== '' || method === 'POST') lines.push(`content-length: ${Buffer.byteLength(body)}`);
  return lines.join('\r\n') + '\r\n\r\n' + body;
}
