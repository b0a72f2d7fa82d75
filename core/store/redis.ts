/**
 * One ioredis client from a `RedisConnectionConfig`: a plain `host:port` or a Sentinel-managed
 * master, with the resolved username/password secrets, the db, and a connection name that shows
 * up in `CLIENT LIST` as `gatehouse:<name>`. The caller owns the client (`quit()` it).
 *
 * Connection behaviour (chosen for a request path that must never hang on Redis):
 * - Reconnects forever (100 ms, 200 ms, ... capped at 2 s, plus jitter); in Sentinel mode each
 *   reconnect asks the sentinels for the current master. A failover reaches the client as a
 *   `+switch-master` event (see `followSwitches`), a closed connection (the master died), a
 *   `READONLY` reply (reconnect and resend) or a silent socket (`socketTimeout`: no reply for
 *   5 s to a pending command destroys it; so no blocking commands such as BLPOP here).
 * - `enableOfflineQueue: true`: a command issued while (re)connecting waits for the connection,
 *   so a failover of a few seconds is absorbed instead of failing every request in it. Waiting
 *   stays bounded: `commandTimeout` (3 s, queued or sent) and `maxRetriesPerRequest` (3).
 * - Errors are logged once per kind and connection state (connecting / ready / down); repeats
 *   are counted and reported with the next state change. Secrets are never logged.
 * - The config's key prefix is NOT given to ioredis: stores build full keys themselves
 *   (`<prefix>vmcp:session:<id>`), so keys read the same in logs, Lua and redis-cli.
 */
import { isIP, type Socket } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
// ioredis declares a subclass of String: this keeps the string methods fast all the same.
import '../base/fast-string-methods.ts';
import type { Logger } from '../observe/log.ts';
import type { RedisConnectionConfig } from '../config/redis-config.ts';
import { trackRedisConnection, type RedisConnectionHealth } from '../observe/redis-health.ts';

export type HostPort = { readonly host: string; readonly port: number };

const ADDRESS = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)):(\d{1,5})$/;

/** Parses `host:port` or `[ipv6]:port`; throws an error naming `what` when malformed. */
export function parseHostPort(text: string, what = 'Redis address'): HostPort {
  const match = ADDRESS.exec(text);
  const port = Number(match?.[4] ?? 0);
  const host = match?.[1] ?? match?.[2];
  if (host === undefined || port < 1 || port > 65535) {
    throw new Error(`${what} ${JSON.stringify(text)} must be host:port (for example 127.0.0.1:6379 or [::1]:6379)`);
  }
  return { host, port };
}

const formatHostPort = (host = 'localhost', port = 6379): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** What a client connects to, for messages: `Redis 10.0.0.1:6379` or `Redis master "m" via sentinels a:1, b:2`. */
function describeRedisTarget(options: RedisOptions): string {
  if (options.sentinels?.length) {
    const sentinels = options.sentinels.map((s) => formatHostPort(s.host, s.port ?? 26379)).join(', ');
    return `Redis master ${JSON.stringify(options.name ?? '')} via sentinels ${sentinels}`;
  }
  return `Redis ${formatHostPort(options.host, options.port)}`;
}

const COMMAND_TIMEOUT_MS = 3_000;
const CONNECT_TIMEOUT_MS = 5_000;
/** After a `+switch-master`, how long a client that reconnected to another node retries. */
const SWITCH_WINDOW_MS = 15_000;
/** Distinct error kinds logged per connection state before the rest are only counted. */
const MAX_LOGGED_KINDS = 10;

/** Reconnect delay: 100 ms per attempt, capped at 2 s, plus up to 100 ms of jitter. */
const retryDelay = (attempt: number): number => Math.min(100 * attempt, 2_000) + Math.floor(Math.random() * 100);

const clientName = (name: string): string => `gatehouse:${name.replace(/[^A-Za-z0-9_.:-]/g, '-')}`;

/** Builds the ioredis options (exported for tests; holds secrets, never log it). */
export function redisOptions(config: RedisConnectionConfig, name: string): RedisOptions {
  const common: RedisOptions = {
    connectionName: clientName(name),
    db: config.db,
    retryStrategy: retryDelay,
    maxRetriesPerRequest: 3,
    enableOfflineQueue: true,
    commandTimeout: COMMAND_TIMEOUT_MS,
    socketTimeout: 5_000,
    connectTimeout: CONNECT_TIMEOUT_MS,
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
    ...(config.username !== null ? { username: config.username.value } : {}),
    ...(config.password !== null ? { password: config.password.value } : {}),
  };
  if (config.sentinel !== null) {
    if (config.sentinel.addresses.length === 0) throw new Error(`Redis sentinel config for master ${JSON.stringify(config.sentinel.masterName)} lists no sentinel addresses`);
    return {
      ...common,
      name: config.sentinel.masterName,
      sentinels: config.sentinel.addresses.map((a) => parseHostPort(a, 'Redis sentinel address')),
      ...(config.sentinel.password !== null ? { sentinelPassword: config.sentinel.password.value } : {}),
      sentinelRetryStrategy: retryDelay,
      sentinelCommandTimeout: COMMAND_TIMEOUT_MS,
    };
  }
  if (config.address === null) throw new Error('Redis config needs either a sentinel section or an address');
  return { ...common, ...parseHostPort(config.address) };
}

type Phase = 'connecting' | 'ready' | 'down';
/** Per client: its phase, and the last error or sentinel error seen (for `waitReady`'s message). */
const states = new WeakMap<Redis, { phase: Phase; lastError: string | null }>();

const errorCode = ({ code }: Error & { code?: unknown }): string | undefined => (typeof code === 'string' ? code : undefined);

/** Logs connection state changes, and each kind of error once per state; counts them for /metrics (redis-health.ts). */
function watch(client: Redis, log: Logger, tracked: ReturnType<typeof trackRedisConnection>): void {
  const health = tracked.health;
  const state = { phase: 'connecting' as Phase, lastError: null as string | null };
  states.set(client, state);
  let seen = new Set<string>();
  let suppressed = 0;
  const enter = (phase: Phase): number => {
    const count = suppressed;
    [state.phase, seen, suppressed] = [phase, new Set(), 0];
    return count;
  };
  const onError = (kind: 'error' | 'sentinel error') => (err: Error) => {
    state.lastError = err.message;
    health.errors += 1;
    // Retry delays and ports vary between repeats of the same problem: they are one kind.
    const key = `${kind}:${errorCode(err) ?? ''}:${err.message.replace(/\d+/g, '#')}`;
    if (seen.has(key) || seen.size >= MAX_LOGGED_KINDS) return void (suppressed += 1);
    seen.add(key);
    log.warn({ phase: state.phase, code: errorCode(err), error: err.message }, `redis ${kind}`);
  };
  client.on('error', onError('error'));
  client.on('sentinelError', onError('sentinel error'));
  client.on('ready', () => {
    const wasDown = state.phase === 'down';
    health.up = true;
    if (wasDown) health.reconnects += 1;
    const repeats = enter('ready');
    state.lastError = null;
    log.info({ repeatedErrors: repeats }, wasDown ? 'redis reconnected' : 'redis ready');
  });
  client.on('close', () => {
    health.up = false;
    if (state.phase !== 'ready') return;
    enter('down');
    log.warn('redis connection lost; reconnecting');
  });
  client.on('end', () => {
    tracked.forget();
    log.info({ repeatedErrors: suppressed }, 'redis connection ended (no more reconnects)');
  });
}

/**
 * Creates an ioredis client that starts connecting at once, or with `lazy` at its first command
 * or `waitReady` (for a plugin, whose connections belong to start(): one created but never
 * started holds no socket). `name` labels the connection in logs and in `CLIENT LIST`. Throws
 * when an address is malformed.
 */
export function createRedisClient(config: RedisConnectionConfig, log: Logger, name: string, lazy = false): Redis {
  const options = { ...redisOptions(config, name), lazyConnect: lazy };
  const clientLog = log.child({ component: 'redis', connection: name, target: describeRedisTarget(options) });
  const tracked = trackRedisConnection(name);
  if (config.sentinel === null) {
    const client = new Redis(options);
    watch(client, clientLog, tracked);
    return client;
  }
  const client = new SentinelClient({ ...options, replyMapping: 'legacy' });
  watch(client, clientLog, tracked);
  followSwitches(client, clientLog, tracked.health);
  return client;
}

/**
 * Subscribes to `+switch-master` on every configured sentinel and moves `client` to the new
 * master at once. Without it a client stays on a demoted master that is still reachable (Sentinel
 * reconfigures it only ~10 s after the switch) and its writes there are lost. For a while after
 * a switch, a reconnect that lands on another node (a sentinel that has not switched yet
 * answered) is redone. (ioredis' own `failoverDetector` has no error listener on its
 * subscribers: a sentinel outage would end up as unlogged stderr noise.)
 */
function followSwitches(client: SentinelClient, log: Logger, health: RedisConnectionHealth): void {
  const options = client.options;
  let expected: { host: string; port: number; until: number } | null = null;
  let announced = '';
  const checkMaster = (): void => {
    if (expected === null || client.status !== 'ready') return;
    const socket = client.stream as Socket | undefined;
    // A sentinel may announce a host name; the socket only knows the address: compare ports then.
    const same = socket?.remotePort === expected.port && (isIP(expected.host) === 0 || socket.remoteAddress === expected.host);
    if (same || Date.now() > expected.until) expected = null;
    else client.disconnect(true);
  };
  client.on('ready', checkMaster);
  const subscribers = (options.sentinels ?? []).map((sentinel) => {
    const [host, port] = [sentinel.host ?? 'localhost', sentinel.port ?? 26379];
    const address = formatHostPort(host, port);
    const subscriber = new Redis({
      host,
      port,
      ...(options.sentinelPassword !== undefined ? { password: options.sentinelPassword } : {}),
      retryStrategy: retryDelay,
      maxRetriesPerRequest: null, // SUBSCRIBE waits for a sentinel that is down at start
      enableReadyCheck: false,
      connectTimeout: CONNECT_TIMEOUT_MS,
      lazyConnect: true,
    });
    let down = false; // logged on changes only
    subscriber.on('error', (err: Error) => {
      if (!down) log.warn({ sentinel: address, error: err.message }, 'cannot follow failovers through this sentinel; retrying');
      down = true;
    });
    subscriber.on('ready', () => {
      if (down) log.info({ sentinel: address }, 'following failovers through this sentinel again');
      down = false;
    });
    subscriber.on('message', (_channel: string, message: string) => {
      // "<master name> <old ip> <old port> <new ip> <new port>", once from each sentinel.
      const [master, , , newHost, newPort] = message.split(' ');
      if (master !== options.name || newHost === undefined) return;
      if (announced !== `${newHost}:${newPort}`) {
        health.switches += 1;
        log.warn({ master: (announced = `${newHost}:${newPort}`) }, 'sentinel switched the master');
      }
      expected = { host: newHost, port: Number(newPort), until: Date.now() + SWITCH_WINDOW_MS };
      checkMaster();
    });
    return subscriber;
  });
  // The subscribers connect with the client: at once, or with a lazy client when it first does.
  const follow = (): void => subscribers.forEach((s) => void s.subscribe('+switch-master').catch(() => {}));
  if (client.status === 'wait') client.once('connecting', follow);
  else follow();
  client.followers.push(...subscribers);
  client.once('end', () => subscribers.forEach((s) => s.disconnect()));
}

/**
 * A Sentinel-mode client whose `disconnect()` also ends its `+switch-master` subscribers (a
 * client disconnected while reconnecting never emits 'end', so that event alone is not enough).
 */
class SentinelClient extends Redis {
  readonly followers: Redis[] = [];

  override disconnect(reconnect = false): void {
    if (!reconnect) for (const follower of this.followers) follower.disconnect();
    super.disconnect(reconnect);
  }
}

/** How sentinels (Redis 7: an error; older: a null reply) say they do not know the master name. */
const UNKNOWN_MASTER = /No such master with that name|got an invalid reply: null/;

function explain(lastError: string | null, masterName: string | undefined): string {
  if (lastError === null) return '';
  if (masterName !== undefined && UNKNOWN_MASTER.test(lastError)) {
    return `: the sentinels answer but know no master named ${JSON.stringify(masterName)} (check the master name; last error: ${lastError})`;
  }
  return `: ${lastError}`;
}

/**
 * Resolves once `client` is ready (connected, authenticated, db selected, and in Sentinel mode
 * talking to the master). Rejects after `timeoutMs`, or as soon as the client gives up, with a
 * message that names the address or master and the last connection error.
 */
export function waitReady(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  const target = describeRedisTarget(client.options);
  const masterName = client.options.sentinels ? (client.options.name ?? undefined) : undefined;
  return new Promise<void>((resolve, reject) => {
    let lastError: string | null = states.get(client)?.lastError ?? null;
    const onError = (err: Error): void => {
      // Keep the more telling sentinel answer over the generic "all sentinels unreachable".
      if (lastError === null || !UNKNOWN_MASTER.test(lastError) || UNKNOWN_MASTER.test(err.message)) lastError = err.message;
    };
    const onEnd = (): void => finish(new Error(`${target} closed before it was ready${explain(lastError, masterName)}`));
    const listeners: [string, (err: Error) => void][] = [['ready', () => finish(null)], ['end', onEnd], ['error', onError], ['sentinelError', onError]];
    const finish = (error: Error | null): void => {
      clearTimeout(timer);
      for (const [event, listener] of listeners) client.off(event, listener);
      if (error === null) resolve();
      else reject(error);
    };
    const timer = setTimeout(
      () => finish(new Error(`${target} is not ready after ${timeoutMs}ms${explain(lastError, masterName) || ' (no error reported: is it reachable?)'}`)),
      timeoutMs,
    );
    for (const [event, listener] of listeners) client.on(event, listener);
    if (client.status === 'end') onEnd();
    else if (client.status === 'wait') client.connect().catch(() => {});
  });
}
