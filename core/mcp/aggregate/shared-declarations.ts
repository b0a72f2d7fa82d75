/**
 * What a backend declares at initialize, held once for every session that got the same: each
 * aggregated session keeps one record per backend (session-store.ts), and without this each of
 * them holds its own copy of the same capabilities object and the same version string (about
 * 0.1 KiB a backend, half a KiB of an idle 5-backend session).
 *
 * Capabilities are kept by their JSON text, frozen (nothing writes a record's capabilities; a
 * shared one must not be writable by anyone), at most MAX_KINDS different ones: past that, a
 * backend's are kept as they are (a backend that declares something new at every initialize
 * cannot grow this table).
 */
import { SUPPORTED_VERSIONS } from '../../protocol/era.ts';

/** Different capability declarations held shared; past it, new ones are not shared. */
const MAX_KINDS = 256;

const capabilitiesByText = new Map<string, Readonly<Record<string, unknown>>>();

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}

/**
 * The shared object equal to `capabilities` (what serverCapabilities kept: plain JSON, bounded),
 * or `capabilities` itself, frozen, as the first of its kind; unfrozen and unshared past MAX_KINDS.
 */
export function sharedCapabilities(capabilities: Record<string, unknown>): Readonly<Record<string, unknown>> {
  const text = JSON.stringify(capabilities);
  const shared = capabilitiesByText.get(text);
  if (shared !== undefined) return shared;
  if (capabilitiesByText.size >= MAX_KINDS) return capabilities;
  deepFreeze(capabilities);
  capabilitiesByText.set(text, capabilities);
  return capabilities;
}

/** The gateway's own string for a protocol version it speaks (one string in all sessions), else `version`. */
export function sharedVersion(version: string): string {
  for (const known of SUPPORTED_VERSIONS) if (known === version) return known;
  return version;
}
