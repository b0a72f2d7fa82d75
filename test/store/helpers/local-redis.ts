/**
 * The Redis the machine runs (127.0.0.1:6379, or GATEHOUSE_TEST_REDIS=host:port): a random key
 * prefix per test run, and the keys under it deleted at the end. When it does not answer (or is
 * older than 6.2, without GETEX) the suite skips with the reason, except under CI=true.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisConnectionConfig } from '../../../core/config/redis-config.ts';
import { parseHostPort } from '../../../core/store/redis.ts';
import { probeClient } from './redis-process.ts';
import { unavailable, type Skip } from './service.ts';

export const LOCAL_REDIS = process.env.GATEHOUSE_TEST_REDIS ?? '127.0.0.1:6379';

export interface LocalRedis {
  /** `gatehouse-test:<random>:` — every key of this run starts with it. */
  readonly keyPrefix: string;
  readonly config: RedisConnectionConfig;
  /** A client for inspecting and planting keys (closed by `cleanup`). */
  readonly admin: Redis;
  /** Deletes every key under the prefix and closes `admin`. */
  cleanup(): Promise<void>;
}

export async function openLocalRedis(): Promise<LocalRedis | Skip> {
  const { host, port } = parseHostPort(LOCAL_REDIS);
  const admin = probeClient(port, null, host);
  let lastError = '';
  admin.on('error', (err: Error) => (lastError = err.message));
  try {
    await admin.connect();
    const version = /redis_version:(\d+)\.(\d+)/.exec(await admin.info('server'));
    const [major, minor] = [Number(version?.[1] ?? 0), Number(version?.[2] ?? 0)];
    if (major < 6 || (major === 6 && minor < 2)) {
      admin.disconnect();
      return unavailable('the Redis suite', `Redis at ${LOCAL_REDIS} is ${major}.${minor}; GETEX needs 6.2 or newer`);
    }
  } catch (err) {
    admin.disconnect();
    return unavailable('the Redis suite', `Redis at ${LOCAL_REDIS} does not answer (${lastError || (err as Error).message})`);
  }
  const keyPrefix = `gatehouse-test:${process.pid}-${randomBytes(4).toString('hex')}:`;
  return {
    keyPrefix,
    config: { sentinel: null, address: LOCAL_REDIS, username: null, password: null, db: 0, keyPrefix },
    admin,
    async cleanup() {
      let cursor = '0';
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 500);
        if (keys.length > 0) await admin.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      admin.disconnect();
    },
  };
}
