/**
 * What the Redis connections of this process have been through, for /metrics: whether each is
 * up, and how many errors, reconnects and master switches it has seen. redis.ts updates it from
 * the clients' events; the metrics read it at scrape time (nothing per command). Connections
 * are named as in `CLIENT LIST` (`vmcp-<name>`, `auth-server`); clients of the same name (two
 * servers in one process) add up. A client that ended leaves.
 */
export interface RedisConnectionHealth {
  /** Connected and ready (in Sentinel mode: to the master). */
  up: boolean;
  errors: number;
  /** Times it became ready again after losing its connection. */
  reconnects: number;
  /** `+switch-master` announcements for its master that it followed. */
  switches: number;
}

const connections = new Set<{ readonly name: string; readonly health: RedisConnectionHealth }>();

/** Starts tracking one client's connection; `forget` when the client ended. */
export function trackRedisConnection(name: string): { readonly health: RedisConnectionHealth; forget(): void } {
  const entry = { name, health: { up: false, errors: 0, reconnects: 0, switches: 0 } };
  connections.add(entry);
  return { health: entry.health, forget: () => void connections.delete(entry) };
}

/** Every tracked connection name with its health, summed over clients of that name (`up`: all of them up). */
export function redisConnections(): Map<string, RedisConnectionHealth> {
  const byName = new Map<string, RedisConnectionHealth>();
  for (const { name, health } of connections) {
    const sum = byName.get(name);
    if (sum === undefined) byName.set(name, { ...health });
    else {
      sum.up &&= health.up;
      sum.errors += health.errors;
      sum.reconnects += health.reconnects;
      sum.switches += health.switches;
    }
  }
  return byName;
}
