/**
 * What the client calls each backend tool (and prompt): filters and renames per backend, then
 * the conflict strategy, then a last check that no two exposed names collide. Pure functions:
 * the lists come in, a name table comes out.
 *
 *  - prefix:   every name becomes `<prefixFormat(backend)><name>`.
 *  - priority: a name only one backend has stays bare; a shared name stays bare for the backend
 *              earliest in `priorityOrder` (then group order) and is prefixed for the others.
 *  - manual:   names stay bare; a shared name needs an override on every backend but one, else
 *              it is a conflict: none of its tools is exposed, and the conflict is reported.
 * Overrides (tools only) always win and are never prefixed.
 */
import { prefixFor, type AggregationConfig } from '../../config/aggregation-config.ts';

export interface Named {
  readonly name: string;
  readonly description?: string;
}

export interface ExposedItem<T extends Named> {
  /** The name the client sees. */
  readonly name: string;
  readonly backend: string;
  /** The backend's own name. */
  readonly original: string;
  /** The backend's item with `name` (and an overridden description) as the client sees them. */
  readonly item: T;
}

export interface NameConflict {
  readonly name: string;
  readonly backends: readonly string[];
  readonly reason: string;
}

export interface NameTable<T extends Named> {
  readonly items: readonly ExposedItem<T>[];
  /** Exposed name → item. */
  readonly byName: ReadonlyMap<string, ExposedItem<T>>;
  readonly conflicts: readonly NameConflict[];
}

/** Backends in the order that decides who keeps a shared name under `priority`. */
function priorityRank(backends: readonly string[], priorityOrder: readonly string[]): Map<string, number> {
  const rank = new Map<string, number>();
  for (const name of priorityOrder) if (!rank.has(name)) rank.set(name, rank.size);
  for (const name of backends) if (!rank.has(name)) rank.set(name, rank.size);
  return rank;
}

interface Candidate<T extends Named> {
  backend: string;
  item: T;
  overridden: string | null;
  description: string | null;
}

/**
 * Builds the name table of one kind of item.
 * @param lists backend name → its items, in group order
 * @param applyToolRules filters and overrides apply to tools only
 */
export function buildNameTable<T extends Named>(
  lists: ReadonlyMap<string, readonly T[]>,
  config: AggregationConfig,
  applyToolRules: boolean,
): NameTable<T> {
  const candidates = candidatesOf(lists, config, applyToolRules);
  const conflicts: NameConflict[] = [];
  const named = nameEach(candidates, [...lists.keys()], config, conflicts);
  // Last check: no two exposed names may collide (a prefix or an override may land on a name in use).
  const byName = new Map<string, ExposedItem<T>>();
  const items: ExposedItem<T>[] = [];
  for (const { name, c } of named) {
    const taken = byName.get(name);
    if (taken !== undefined) {
      conflicts.push({
        name,
        backends: [taken.backend, c.backend],
        reason: `"${name}" would name both ${taken.backend}/${taken.original} and ${c.backend}/${c.item.name}: the first is kept`,
      });
      continue;
    }
    const item = { ...c.item, name, ...(c.description === null ? {} : { description: c.description }) } as T;
    const exposed: ExposedItem<T> = { name, backend: c.backend, original: c.item.name, item };
    byName.set(name, exposed);
    items.push(exposed);
  }
  return { items, byName, conflicts };
}

/** Every item each backend offers, after the tool filters and excludes, with its override. */
function candidatesOf<T extends Named>(lists: ReadonlyMap<string, readonly T[]>, config: AggregationConfig, applyToolRules: boolean): Candidate<T>[] {
  const candidates: Candidate<T>[] = [];
  for (const [backend, items] of lists) {
    const rules = applyToolRules ? config.tools[backend] : undefined;
    for (const item of items) {
      if (rules?.filter != null && !rules.filter.includes(item.name)) continue;
      if (rules?.exclude.includes(item.name)) continue;
      const override = rules?.overrides[item.name];
      candidates.push({ backend, item, overridden: override?.name ?? null, description: override?.description ?? null });
    }
  }
  return candidates;
}

/** Each candidate's exposed name by the conflict resolution; `manual`'s unresolved clashes go to `conflicts`. */
function nameEach<T extends Named>(candidates: readonly Candidate<T>[], backends: readonly string[], config: AggregationConfig, conflicts: NameConflict[]): { name: string; c: Candidate<T> }[] {
  // Which backends have each bare name (overridden ones do not compete for it).
  const holders = new Map<string, string[]>();
  for (const c of candidates) {
    if (c.overridden !== null) continue;
    const list = holders.get(c.item.name) ?? [];
    list.push(c.backend);
    holders.set(c.item.name, list);
  }
  const rank = priorityRank(backends, config.priorityOrder);
  const reported = new Set<string>();
  const named: { name: string; c: Candidate<T> }[] = [];
  for (const c of candidates) {
    if (c.overridden !== null) {
      named.push({ name: c.overridden, c });
      continue;
    }
    const sharing = holders.get(c.item.name)!;
    const prefixed = prefixFor(config.prefixFormat, c.backend) + c.item.name;
    switch (config.conflictResolution) {
      case 'prefix':
        named.push({ name: prefixed, c });
        break;
      case 'priority': {
        const winner = sharing.reduce((best, b) => (rank.get(b)! < rank.get(best)! ? b : best));
        named.push({ name: sharing.length === 1 || winner === c.backend ? c.item.name : prefixed, c });
        break;
      }
      case 'manual':
        if (sharing.length === 1) {
          named.push({ name: c.item.name, c });
        } else if (!reported.has(c.item.name)) {
          reported.add(c.item.name);
          conflicts.push({
            name: c.item.name,
            backends: sharing,
            reason: `"${c.item.name}" exists on ${sharing.join(', ')}: conflictResolution manual needs an override for it on all of them but one`,
          });
        }
        break;
    }
  }
  return named;
}
