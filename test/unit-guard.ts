/**
 * Loaded into every test process of `npm run test:unit` (`--import`): a unit test needs no
 * service. It may start servers of its own in its process and talk to them over loopback; it may
 * not start a child process, reach past loopback, or connect to the services the e2e tests use
 * (PostgreSQL on 5432, Redis on 6379, Sentinel on 26379, or GATEHOUSE_TEST_REDIS).
 *
 * A breach throws where it happens and is also counted: whatever the test made of the error (a
 * suite that skips when Redis does not answer would pass, skipped), the process exits 1 naming
 * each breach, which fails the file. The fix is to move the file to E2E in test/tiers.ts.
 *
 * Only the test files' processes are guarded (the runner itself spawns them): Node's test
 * runner marks them with NODE_TEST_CONTEXT.
 */
import childProcess from 'node:child_process';
import net, { isIP } from 'node:net';
import { syncBuiltinESMExports } from 'node:module';

const SERVICE_PORTS = new Set([5432, 6379, 26379]);
const redisPort = Number(/:(\d+)$/.exec(process.env.GATEHOUSE_TEST_REDIS ?? '')?.[1]);
if (Number.isInteger(redisPort)) SERVICE_PORTS.add(redisPort);

const breaches: string[] = [];

function breach(what: string): Error {
  const message = `a unit test ${what}: unit tests need no service (test/unit-guard.ts); list this file under E2E in test/tiers.ts`;
  breaches.push(`${message}\n${new Error().stack?.split('\n').slice(3, 9).join('\n') ?? ''}`);
  return new Error(message);
}

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  const v4 = bare.startsWith('::ffff:') ? bare.slice(7) : bare;
  if (isIP(v4) === 4) return v4.startsWith('127.') || v4 === '0.0.0.0';
  return bare === '::1' || bare === '::';
}

/** The host and port (or IPC path) a `socket.connect(...)` call asks for, whichever of its forms it is. */
function connectTarget(args: unknown[]): { host: string; port: number } | { path: string } {
  let first = args[0];
  if (Array.isArray(first)) first = first[0]; // net.connect() passes its normalized arguments
  if (typeof first === 'object' && first !== null) {
    const options = first as { host?: string; port?: number | string; path?: string };
    if (typeof options.path === 'string') return { path: options.path };
    return { host: options.host ?? 'localhost', port: Number(options.port) };
  }
  if (typeof first === 'string' && !/^\d+$/.test(first)) return { path: first };
  return { host: typeof args[1] === 'string' ? args[1] : 'localhost', port: Number(first) };
}

if (process.env.NODE_TEST_CONTEXT !== undefined) {
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
    (childProcess as unknown as Record<string, unknown>)[name] = (...args: unknown[]): never => {
      throw breach(`started a child process (${name} ${String(args[0])})`);
    };
  }

  const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
    const target = connectTarget(args);
    if ('path' in target) {
      if (target.path.includes('.s.PGSQL') || /redis/i.test(target.path)) throw breach(`connected to a service's socket (${target.path})`);
    } else if (!isLoopback(target.host)) {
      throw breach(`connected past loopback (${target.host}:${target.port})`);
    } else if (SERVICE_PORTS.has(target.port)) {
      throw breach(`connected to a service (${target.host}:${target.port}: PostgreSQL, Redis or Sentinel)`);
    }
    return connect.apply(this, args);
  } as typeof net.Socket.prototype.connect;

  syncBuiltinESMExports();

  process.on('exit', () => {
    if (breaches.length === 0) return;
    process.stderr.write(`\n${breaches.length} unit-test rule breach(es):\n${breaches.join('\n\n')}\n`);
    process.exitCode = 1;
  });
}
