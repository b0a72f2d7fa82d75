/**
 * What the gateway knows of each backend's generation of MCP (its era), learnt the way MCP tells
 * a dual-era client to: a modern `server/discover` first. A `DiscoverResult`, or a modern error
 * listing a modern version it supports, makes the backend modern: the gateway then speaks
 * 2026-07-28 to it whatever its clients speak (no backend sessions; the client's envelope on
 * every request), and takes its capabilities and instructions from the discovery. Any other
 * answer (a 4xx without a modern error, a 404 or 405, a legacy session error) makes it legacy:
 * `initialize` and sessions, as before.
 *
 * A verdict is kept for PROFILE_TTL_MS, and probed again by the health checks, by the first
 * request after it expires, and whenever a backend answers in a way its era does not explain.
 * An answer that says nothing of the era (a 401 to a probe without the caller's credentials,
 * an unreachable backend) is no verdict: the next use probes again, with the caller's context.
 */
import { performance } from 'node:perf_hooks';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { MODERN_VERSIONS, META, type Era } from '../../protocol/era.ts';
import type { BackendLink, CallResult } from './backend-link.ts';
import { serverCapabilities, serverInstructions } from './declarations.ts';
import type { BackendSessionRecord } from './session-store.ts';

/** How long a verdict is kept before the next use probes again. */
export const PROFILE_TTL_MS = 10 * 60_000;

const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** Statuses that say nothing of the era. */
const NO_VERDICT = new Set([401, 403, 407, 408, 413, 429, 431]);
/** After a probe that gave no verdict, the next one waits this long (uses meanwhile are legacy). */
const NO_VERDICT_MS = 5_000;
/** Codes only a modern server answers with (HeaderMismatch, MissingRequiredClientCapability, UnsupportedProtocolVersion). */
const MODERN_ERRORS = new Set([-32020, -32021, -32022]);

export interface BackendProfile {
  readonly era: Era;
  /** The modern version the gateway speaks to it (modern), or null. */
  readonly version: string | null;
  /** Its capabilities as its discovery states them (modern), or {} (legacy: initialize says). */
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly instructions: unknown;
  readonly serverInfo: unknown;
  /** performance.now() of the probe. */
  readonly probedAt: number;
}

/** The record of a modern backend in a session: no session id, its version, its discovered capabilities. */
export function modernRecord(profile: BackendProfile): BackendSessionRecord {
  return { sessionId: null, protocolVersion: profile.version ?? MODERN_VERSIONS[0]!, capabilities: profile.capabilities };
}

/** What a probe's answer says of the backend's era; null when it says nothing (no verdict). */
export function verdictOf(result: CallResult, now: number): BackendProfile | null {
  const response = result.response;
  const given = response?.result;
  // A JSON-RPC result that is not an object says nothing of the era.
  if (given !== undefined && (typeof given !== 'object' || given === null)) return null;
  const discovered = given as { supportedVersions?: unknown; capabilities?: unknown; instructions?: unknown; _meta?: Record<string, unknown> } | undefined;
  if (discovered !== undefined && Array.isArray(discovered.supportedVersions)) {
    const version = MODERN_VERSIONS.find((v) => (discovered.supportedVersions as unknown[]).includes(v));
    if (version !== undefined) {
      // Each session of a modern backend keeps these (declarations.ts): what the gateway reads of them.
      return { era: 'modern', version, capabilities: serverCapabilities(discovered.capabilities), instructions: serverInstructions(discovered.instructions), serverInfo: discovered._meta?.[META.serverInfo] ?? null, probedAt: now };
    }
    return legacy(now);
  }
  const error = response?.error;
  if (error !== undefined && MODERN_ERRORS.has(error.code)) {
    if (error.code === UNSUPPORTED_PROTOCOL_VERSION) {
      const supported = (error.data as { supported?: unknown } | undefined)?.supported;
      const version = Array.isArray(supported) ? MODERN_VERSIONS.find((v) => supported.includes(v)) : undefined;
      // A modern server that speaks none of our modern versions: only its legacy side (if any) can serve us.
      if (version === undefined) return legacy(now);
    }
    // Modern, but it refused the probe itself: it speaks our version (a retry would show the rest).
    return { era: 'modern', version: MODERN_VERSIONS[0]!, capabilities: {}, instructions: undefined, serverInfo: null, probedAt: now };
  }
  // Credentials the probe did not have, a server failing or shedding load, a request it would
  // not read: nothing said about the era (a verdict is shared by every caller for ten minutes).
  if (NO_VERDICT.has(result.status) || result.status >= 500) return null;
  return legacy(now);
}

function legacy(now: number): BackendProfile {
  return { era: 'legacy', version: null, capabilities: {}, instructions: undefined, serverInfo: null, probedAt: now };
}

const PROBE_RECORD: BackendSessionRecord = { sessionId: null, protocolVersion: MODERN_VERSIONS[0]!, capabilities: {} };

export class BackendProfiles {
  readonly #profiles = new Map<string, BackendProfile>();
  readonly #probes = new Map<string, Promise<BackendProfile | null>>();
  /** performance.now() until which a backend whose probe gave no verdict is not probed again. */
  readonly #quietUntil = new Map<string, number>();

  /**
   * The backend's profile if one is known and fresh at `now` (performance.now(); a request passes
   * the time it started, read already: a clock read less on every transparent request, and a
   * verdict ten minutes old is not made wrong by the milliseconds a request waited).
   */
  get(link: BackendLink, now = performance.now()): BackendProfile | undefined {
    const profile = this.#profiles.get(link.name);
    return profile !== undefined && now - profile.probedAt < PROFILE_TTL_MS ? profile : undefined;
  }

  /** The backend's last verdict, fresh or not (for /status). */
  known(link: BackendLink): BackendProfile | undefined {
    return this.#profiles.get(link.name);
  }

  /** The backend's profile: the known one, or a probe's (with the caller's context and credentials). */
  of(ctx: Context | null, link: BackendLink): BackendProfile | Promise<BackendProfile> {
    const known = this.get(link);
    if (known !== undefined) return known;
    return this.probe(ctx, link).then((profile) => {
      if (profile !== null) return profile;
      // No verdict (credentials refused, or the backend failing): treated as legacy for this use only.
      return legacy(performance.now());
    });
  }

  /**
   * Probes the backend now (concurrent probes share one); resolves with the verdict, or null when
   * the answer said nothing of the era. Throws when the backend cannot be reached.
   */
  probe(ctx: Context | null, link: BackendLink, force = false): Promise<BackendProfile | null> {
    const pending = this.#probes.get(link.name);
    if (pending !== undefined) return pending;
    if (!force && (this.#quietUntil.get(link.name) ?? 0) > performance.now()) return Promise.resolve(null);
    const probe = link
      .call(ctx, PROBE_RECORD, { jsonrpc: '2.0', id: 'gatehouse-discover', method: 'server/discover', params: {} })
      .then((result) => {
        const verdict = verdictOf(result, performance.now());
        if (verdict !== null) this.#profiles.set(link.name, verdict);
        // A caller's probe without a verdict keeps the others from probing at once; the gateway's
        // own (no credentials) does not hold the callers back.
        else if (ctx !== null) this.#quietUntil.set(link.name, performance.now() + NO_VERDICT_MS);
        return verdict;
      })
      .finally(() => this.#probes.delete(link.name));
    this.#probes.set(link.name, probe);
    return probe;
  }

  /** Forgets a verdict the backend contradicted (a modern one refused a modern request as legacy would). */
  forget(name: string): void {
    this.#profiles.delete(name);
  }
}

/** Whether `err` is a failure to reach the backend at all (as opposed to an answer). */
export function unreachable(err: unknown): boolean {
  return err instanceof GatewayError && (err.code === 'backend_unavailable' || err.code === 'backend_timeout');
}
