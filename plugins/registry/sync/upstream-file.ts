/**
 * The upstream registry file format: the official MCP registry's data as one JSON document,
 * `{"data": {"servers": [<server.json>...], "skills": [<skill>...]}}` (other top-level fields,
 * such as `$schema`, `version` and `meta`, are allowed and ignored). A skill is named by
 * `namespace` and `name` apart (ToolHive's shape), or by `name: "namespace/name"`; either way it is
 * stored and served in ToolHive's shape (model/skill-document.ts).
 *
 * A file that is not JSON, or not of that shape, is refused as a whole (the source keeps its last
 * good data). Within a good file, each item is checked on its own (`checkUpstreamItem`, which
 * other source kinds reuse for what they read): an invalid item is skipped and named, by where it
 * is, what it is and why (`data.servers[3] (io.github.x/y 1.0.0): /description: must NOT have
 * more than 100 characters`), and the other items are synced. A name and version that appears
 * twice keeps its first occurrence.
 */
import { createHash } from 'node:crypto';
import { documentDigest } from '../store/entries-store.ts';
import type { EntryKind } from '../store/records.ts';
import type { SyncItem } from '../store/source-sync-writer.ts';
import { jsonValueBound, jsonValueProblem, MAX_SYNCED_JSON_VALUES } from '../model/json-value.ts';
import { documentName, versionProblem } from '../model/names.ts';
import { describeProblems, serverJsonProblems } from '../model/server-json.ts';
import { canonicalSkill } from '../model/skill-document.ts';

export type UpstreamParse =
  | {
      ok: true;
      items: SyncItem[];
      /** Valid items of each kind (those in `items`). */
      servers: number;
      skills: number;
      /**
       * The items refused, each named with why: at most MAX_SKIPPED_NAMED, then one line counting
       * the others.
       */
      skipped: string[];
    }
  | { ok: false; message: string };

/** The result of checking one item: the item to write, or why it is refused (one line, starting with `where`). */
export type ItemCheck = { item: SyncItem } | { problem: string };

/** Refused items named one by one in a parse result (a file may hold thousands). */
export const MAX_SKIPPED_NAMED = 100;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function contentDigest(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('base64url');
}

/**
 * Checks one server.json (`kind` server: Gatehouse's name and version rules, then the official
 * schema and rules) or skill document (name and version rules) read from a source. `where` says
 * where it was found (`data.servers[3]`, a URL, a resource name); the problem names it, with the
 * item's name and version once those are valid.
 */
export function checkUpstreamItem(kind: EntryKind, document: unknown, where: string): ItemCheck {
  const checked = checkItem(kind, document, where);
  // A problem names JSON paths, and so the keys on them, which may be any length.
  if ('problem' in checked && checked.problem.length > MAX_PROBLEM_LENGTH) return { problem: `${checked.problem.slice(0, MAX_PROBLEM_LENGTH)}…` };
  return checked;
}

/** Longest problem named for one item. */
const MAX_PROBLEM_LENGTH = 400;

function checkItem(kind: EntryKind, document: unknown, where: string): ItemCheck {
  if (!isObject(document)) return { problem: `${where}: must be an object` };
  const { name, problem: nameProblem } = documentName(kind, document);
  const version = document.version;
  const versionOk = versionProblem(version) === null;
  const label = name !== undefined && versionOk ? `${where} (${name} ${version as string})` : where;
  const structural = jsonValueProblem(document);
  if (structural !== null) return { problem: `${label}: ${structural.replace(/^\$/, 'the item')}` };
  const first = nameProblem ?? versionProblem(version);
  if (first !== null) return { problem: `${label}: ${first}` };
  if (kind === 'server') {
    const problems = serverJsonProblems(document);
    if (problems.length > 0) return { problem: `${label}: ${describeProblems(problems)}` };
  }
  const stored = kind === 'skill' ? canonicalSkill(document, name!) : document;
  return { item: { kind, name: name!, version: version as string, document: stored, digest: documentDigest(stored) } };
}

export function parseUpstreamFile(content: string, maxValues = MAX_SYNCED_JSON_VALUES): UpstreamParse {
  if (jsonValueBound(content) > maxValues) {
    return { ok: false, message: `the file holds more than ${maxValues} JSON values: it is refused before it is parsed` };
  }
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (err) {
    // Not the parser's message: it quotes the file (what a file source names may not be the caller's to read).
    const position = /at position (\d+)/.exec((err as Error).message)?.[1];
    return { ok: false, message: `the file is not valid JSON${position === undefined ? '' : ` (at position ${position})`}` };
  }
  if (!isObject(json) || !isObject(json.data)) {
    return { ok: false, message: 'the file is not in the upstream format: expected {"data": {"servers": [...], "skills": [...]}}' };
  }
  const lists = [['servers', 'server'], ['skills', 'skill']] as const;
  for (const [field] of lists) {
    const list = json.data[field];
    if (list !== undefined && !Array.isArray(list)) return { ok: false, message: `the file is not in the upstream format: data.${field} must be a list` };
  }
  const items: SyncItem[] = [];
  const skipped: string[] = [];
  let refused = 0;
  const refuse = (problem: string): void => {
    refused++;
    if (skipped.length < MAX_SKIPPED_NAMED) skipped.push(problem);
  };
  const firstAt = new Map<string, string>();
  const counts = { server: 0, skill: 0 };
  for (const [field, kind] of lists) {
    const list = (json.data[field] ?? []) as unknown[];
    list.forEach((entry, index) => {
      const where = `data.${field}[${index}]`;
      const checked = checkUpstreamItem(kind, entry, where);
      if ('problem' in checked) return refuse(checked.problem);
      const { item } = checked;
      const key = `${kind}\u001f${item.name}\u001f${item.version}`;
      const first = firstAt.get(key);
      if (first !== undefined) return refuse(`${where} (${item.name} ${item.version}): appears twice: the first, ${first}, is kept`);
      firstAt.set(key, where);
      counts[kind]++;
      items.push(item);
    });
  }
  if (refused > skipped.length) skipped.push(`and ${refused - skipped.length} more items skipped`);
  return { ok: true, items, servers: counts.server, skills: counts.skill, skipped };
}
