/**
 * Raw TCP clients of a server under test, for the tests of what a client may make a server
 * hold (connection-limits.test.ts: Gatehouse's own server; node-engine-limits.test.ts:
 * node:http with the limits added): sockets opened on loopback, closed after each test, and a
 * wait for a condition that fails naming what did not happen.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/** The sockets opened since `closeRawClients` last ran. */
const open: Socket[] = [];

/** A connected socket to `port` on 127.0.0.1 (its errors ignored: a dropped client is the point). */
export async function rawClient(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  open.push(socket);
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  return socket;
}

/** Destroys every socket rawClient opened (for afterEach). */
export function closeRawClients(): void {
  for (const socket of open.splice(0)) socket.destroy();
}

/** Resolves once `check()` holds; rejects naming `what` after `timeoutMs`. */
export async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Closes the raw clients, then `server` (its connections first), if one was started. */
export async function closeAll(server: { closeAllConnections(): void; close(callback: () => void): unknown } | null): Promise<void> {
  closeRawClients();
  if (server === null) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
