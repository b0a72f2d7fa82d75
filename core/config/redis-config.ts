/**
 * How to reach Redis: one plain address (development) or a Sentinel-managed master
 * (production). Shared by the aggregated-session store and the auth server's storage.
 */
import type { ResolvedSecretRef } from './secrets.ts';

export interface RedisConnectionConfig {
  /** Sentinel-managed master: the master's name and the sentinels to ask for it. */
  readonly sentinel: {
    readonly masterName: string;
    readonly addresses: readonly string[];
    readonly password: ResolvedSecretRef | null;
  } | null;
  /** A plain `host:port` (exactly one of `sentinel` and `address` is set). */
  readonly address: string | null;
  readonly username: ResolvedSecretRef | null;
  readonly password: ResolvedSecretRef | null;
  readonly db: number;
  /** Prefix of every key Gatehouse writes (default `gatehouse:`). */
  readonly keyPrefix: string;
}
