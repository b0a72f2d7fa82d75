/**
 * The upstream registry file format: the official MCP registry's data as one JSON document,
 * `{"data": {"servers": [<server.json>...], "skills": [<skill>...]}}` (other top-level fields,
 * such as `$schema`, `version` and `meta`, are allowed and ignored). A skill is named either by
 * `name: "namespace/name"` or by `namespace` and `name` apart.
 *
 * Parsing is strict: a file with any invalid item is refused as a whole (the source keeps its
 * last good data), with the first problems named by their JSON path.
 */
import { createHash } from 'node:crypto';
import { documentDigest } from '../store/entries-store.ts';
import type { SyncItem } from '../store/source-sync-writer.ts';
import { jsonValueProblem } from '../model/json-value.ts';
import { entryNameProblem, versionProblem } from '../model/names.ts';

export type UpstreamParse = { ok: true; items: SyncItem[]; servers: number; skills: number } | { ok: false; message: string };

const MAX_PROBLEMS = 5;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function contentDigest(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('base64url');
}

export function parseUpstreamFile(content: string): UpstreamParse {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (err) {
    return { ok: false, message: `the file is not valid JSON: ${(err as Error).message}` };
  }
  if (!isObject(json) || !isObject(json.data)) {
    return { ok: false, message: 'the file is not in the upstream format: expected {"data": {"servers": [...], "skills": [...]}}' };
  }
  const problems: string[] = [];
  const items: SyncItem[] = [];
  const seen = new Set<string>();
  const lists = [['servers', 'server'], ['skills', 'skill']] as const;
  const counts = { server: 0, skill: 0 };
  for (const [field, kind] of lists) {
    const list = json.data[field];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      problems.push(`data.${field}: must be a list`);
      continue;
    }
    list.forEach((item, index) => {
      const where = `data.${field}[${index}]`;
      if (!isObject(item)) return void problems.push(`${where}: must be an object`);
      const name = kind === 'skill' && typeof item.namespace === 'string' && typeof item.name === 'string' ? `${item.namespace}/${item.name}` : item.name;
      const problem = entryNameProblem(name) ?? versionProblem(item.version) ?? jsonValueProblem(item)?.replace(/^\$/, 'the item') ?? null;
      if (problem !== null) return void problems.push(`${where}: ${problem}`);
      const key = `${kind}\u001f${String(name)}\u001f${String(item.version)}`;
      if (seen.has(key)) return void problems.push(`${where}: ${kind} ${JSON.stringify(name)} version ${JSON.stringify(item.version)} appears twice`);
      seen.add(key);
      counts[kind]++;
      items.push({ kind, name: name as string, version: item.version as string, document: item, digest: documentDigest(item) });
    });
  }
  if (problems.length > 0) {
    const more = problems.length > MAX_PROBLEMS ? ` (and ${problems.length - MAX_PROBLEMS} more)` : '';
    return { ok: false, message: `${problems.slice(0, MAX_PROBLEMS).join('; ')}${more}` };
  }
  return { ok: true, items, servers: counts.server, skills: counts.skill };
}
