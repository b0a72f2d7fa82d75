/**
 * The backend name of a registry's server: what its tools are prefixed with (`{workload}_`),
 * what logs, metrics and `/status` call it.
 *
 * Derived from the whole entry name, namespace included, so that a server is named the same
 * whatever else the registry holds and one publisher's `io.evil/github` can never take the name
 * of another's server: lowercase, every run of characters other than `a-z` and `0-9` made one
 * `-`, no `-` at either end (`io.github.acme/weather` → `io-github-acme-weather`). The letters,
 * digits and `-` of it are what a tool name may hold in every LLM API, and it is at most 63
 * characters: a longer one keeps its first 54 and ends in `-` and 8 hex digits of the SHA-256 of
 * the entry name.
 *
 * Clashes are resolved the same way whatever order the registry lists its entries in:
 *  - an MCPServer of the file keeps its name (the operator's file outranks the registry), and a
 *    registry server deriving that name takes the hashed form;
 *  - registry servers deriving one name (`a.b/c` and `a/b.c`) all take the hashed form, so
 *    that no entry wins the plain name by sorting first;
 *  - a hashed form that still clashes (never in practice) is skipped.
 */
import { createHash } from 'node:crypto';
import type { FedServer } from './registry-entries.ts';

const MAX_NAME = 63;
const KEPT = MAX_NAME - 9;

function hashed(base: string, entry: string): string {
  const digest = createHash('sha256').update(entry).digest('hex').slice(0, 8);
  return `${base.slice(0, KEPT).replace(/-+$/, '')}-${digest}`;
}

/** The name an entry's server has in the group when nothing clashes with it. */
export function fedBackendName(entry: string): string {
  const base = entry.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'server';
  return base.length > MAX_NAME ? hashed(base, entry) : base;
}

export interface NamedServer extends FedServer {
  /** Its backend name in the group. */
  readonly name: string;
}

export interface FedNaming {
  /** The servers, with their names, in the order of their names. */
  readonly servers: readonly NamedServer[];
  /** What was renamed or skipped, and why, for the log. */
  readonly notes: readonly string[];
}

/** Names for `servers` beside the file's backends `taken`. */
export function nameFedServers(servers: readonly FedServer[], taken: ReadonlySet<string>): FedNaming {
  const byBase = new Map<string, FedServer[]>();
  for (const server of servers) {
    const base = fedBackendName(server.entry);
    const list = byBase.get(base);
    if (list === undefined) byBase.set(base, [server]);
    else list.push(server);
  }
  const notes: string[] = [];
  const named: NamedServer[] = [];
  const used = new Set(taken);
  for (const [base, group] of byBase) {
    if (group.length === 1 && !taken.has(base)) {
      named.push({ ...group[0]!, name: base });
      used.add(base);
    }
  }
  for (const [base, group] of byBase) {
    if (group.length === 1 && !taken.has(base)) continue;
    const why = taken.has(base) ? `an MCPServer of the file is named "${base}"` : `${group.map((s) => JSON.stringify(s.entry)).join(' and ')} all derive "${base}"`;
    for (const server of group) {
      const name = hashed(base, server.entry);
      if (used.has(name)) {
        notes.push(`registry server ${JSON.stringify(server.entry)} skipped: its name "${base}" and its hashed form "${name}" are both taken`);
        continue;
      }
      used.add(name);
      named.push({ ...server, name });
      notes.push(`registry server ${JSON.stringify(server.entry)} is named "${name}": ${why}`);
    }
  }
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { servers: named, notes };
}
