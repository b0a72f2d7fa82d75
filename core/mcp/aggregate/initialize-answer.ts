/**
 * What an aggregated session's initialize answers the client, made from its backends' answers:
 * the version, the capabilities merged, the instructions naming the backends.
 */
import { LEGACY_VERSIONS } from '../../protocol/era.ts';

/** The legacy version of a session: the client's, when the gateway speaks it, else the newest. */
export function negotiateVersion(requested: unknown): string {
  return typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]!;
}

type Capabilities = Record<string, unknown>;

function flag(caps: Capabilities, group: string, key: string): boolean {
  const value = caps[group];
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[key] === true;
}

/**
 * The capabilities the client sees: the union of the backends'. `listChanged` is declared for
 * every list the gateway serves, since the gateway itself changes them (a backend that joins
 * late or restarts with other tools), and forwards the backends' own; subscribe when any backend
 * supports it. With backends still to join (`expectMore`), every list is declared: what they
 * bring can only be announced on a list the client knows about.
 */
export function mergeCapabilities(backends: readonly Capabilities[], expectMore = false): Capabilities {
  const merged: Capabilities = {};
  const has = (group: string): boolean => expectMore || backends.some((caps) => caps[group] !== undefined);
  const any = (group: string, key: string): boolean => backends.some((caps) => flag(caps, group, key));
  if (has('tools')) merged.tools = { listChanged: true };
  if (has('prompts')) merged.prompts = { listChanged: true };
  if (has('resources')) merged.resources = any('resources', 'subscribe') ? { subscribe: true, listChanged: true } : { listChanged: true };
  if (backends.some((caps) => caps.logging !== undefined)) merged.logging = {};
  if (backends.some((caps) => caps.completions !== undefined)) merged.completions = {};
  if (backends.some((caps) => caps.tasks !== undefined)) merged.tasks = mergeObjects(backends.map((caps) => caps.tasks));
  if (backends.some((caps) => caps.experimental !== undefined)) merged.experimental = mergeObjects(backends.map((caps) => caps.experimental));
  return merged;
}

function mergeObjects(values: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const value of values) {
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, inner] of Object.entries(value)) {
      const existing = out[key];
      out[key] =
        typeof existing === 'object' && existing !== null && typeof inner === 'object' && inner !== null
          ? mergeObjects([existing, inner])
          : (existing ?? inner);
    }
  }
  return out;
}

/** Instructions for the client: which servers are behind this endpoint, and which are missing. */
/** The backends that joined a session (with their own instructions) and the ones missing at its start. */
export interface InstructionParts {
  readonly joined: readonly { name: string; instructions: unknown }[];
  readonly missing: readonly { name: string; reason: string }[];
}

export function mergeInstructions(
  vmcpName: string,
  joined: readonly { name: string; instructions: unknown }[],
  missing: readonly { name: string; reason: string }[],
): string {
  const lines = [`"${vmcpName}" is a virtual MCP server aggregating: ${joined.map((b) => b.name).join(', ')}.`];
  if (missing.length > 0) {
    lines.push(`Unavailable when this session started (they join it when they come up): ${missing.map((m) => `${m.name} (${m.reason})`).join('; ')}.`);
  }
  for (const backend of joined) {
    if (typeof backend.instructions === 'string' && backend.instructions.trim().length > 0) {
      lines.push('', `## ${backend.name}`, backend.instructions.trim());
    }
  }
  return lines.join('\n');
}
