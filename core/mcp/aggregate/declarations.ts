/**
 * What a session keeps of what each side declared about itself, bounded. An aggregated session
 * lives for its TTL (30 minutes by default, sliding) in this process or in Redis, so whatever it
 * keeps of a client's `initialize` (or of a 2026-07-28 request's `_meta`) and of its backends'
 * answers stays that long, once per session:
 *
 *  - the client's capabilities go to every backend (its initialize, a modern backend's `_meta`),
 *    which read them (what the client may be asked, which modes, extensions), so they are kept as
 *    declared; larger than `session.maxSessionSize` as JSON, they are refused (-32602) before
 *    any backend is asked;
 *  - the client's clientInfo only names it: name, version and title are kept, each cut to
 *    MAX_INFO_CHARS; the rest is dropped;
 *  - a backend's capabilities: only what the gateway reads of them (which lists it serves, with
 *    listChanged / subscribe, logging, completions), and `tasks` / `experimental` (passed on to
 *    the client, merged) while each is within MAX_SERVER_PART_BYTES;
 *  - a backend's instructions: cut to MAX_INSTRUCTIONS_CHARS.
 *
 * The same holds for what goes on to the backends: a modern request's envelope is checked here
 * too (its log level one of MCP's), since a list sends it to every modern backend.
 */
import { Buffer } from 'node:buffer';
import { GatewayError } from '../../base/errors.ts';
import { MCP_LOG_LEVELS, META } from '../../protocol/era.ts';
import { MAX_NESTING } from '../../protocol/jsonrpc.ts';

/** Characters kept of each of clientInfo's name, version and title. */
export const MAX_INFO_CHARS = 256;
/** A backend's `tasks` or `experimental` capability larger than this as JSON is not kept. */
export const MAX_SERVER_PART_BYTES = 16 * 1024;
/** Characters kept of a backend's instructions. */
export const MAX_INSTRUCTIONS_CHARS = 16 * 1024;

/**
 * The size of `value` as JSON text (strings by their UTF-8 bytes, escapes not counted), or
 * Infinity once it is past `limit` or nests deeper than MAX_NESTING: the walk stops there, so
 * measuring a huge value costs no more than measuring `limit` bytes of it.
 */
export function jsonSize(value: unknown, limit: number): number {
  const budget = { left: limit };
  return measure(value, budget, 0) ? limit - budget.left : Infinity;
}

/** Counts `value` against `budget`; false once the budget is spent or the nesting too deep. */
function measure(value: unknown, budget: { left: number }, depth: number): boolean {
  switch (typeof value) {
    case 'string':
      budget.left -= Buffer.byteLength(value) + 2;
      return budget.left >= 0;
    case 'number':
    case 'boolean':
      budget.left -= String(value).length;
      return budget.left >= 0;
    case 'object': {
      if (value === null) {
        budget.left -= 4;
        return budget.left >= 0;
      }
      if (depth >= MAX_NESTING) return false;
      budget.left -= 2;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          budget.left -= i === 0 ? 0 : 1;
          if (!measure(value[i], budget, depth + 1)) return false;
        }
        return budget.left >= 0;
      }
      let first = true;
      for (const key in value) {
        // "key": and a comma before all but the first.
        budget.left -= Buffer.byteLength(key) + 3 + (first ? 0 : 1);
        first = false;
        if (!measure((value as Record<string, unknown>)[key], budget, depth + 1)) return false;
      }
      return budget.left >= 0;
    }
    default:
      // undefined, functions: JSON leaves them out (JSON.parse never makes them).
      return true;
  }
}

/**
 * The client's capabilities as a session keeps them (`where` names them in the error: the
 * initialize's `params.capabilities`, or a modern request's `_meta` member): an object, within
 * `maxBytes` as JSON. Anything else is -32602, naming what is too large and the limit.
 */
export function clientCapabilities(value: unknown, maxBytes: number, where: string): Readonly<Record<string, unknown>> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new GatewayError('invalid_params', `Invalid params: ${where} must be an object`);
  const size = jsonSize(value, maxBytes);
  if (size === Infinity) {
    throw new GatewayError('invalid_params', `Invalid params: ${where} is larger than a session keeps: more than ${maxBytes} bytes as JSON (session.maxSessionSize)`, {
      extra: { limit: maxBytes, setting: 'session.maxSessionSize' },
    });
  }
  return value as Readonly<Record<string, unknown>>;
}

/** `text` cut to `max` characters, never in the middle of a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\ud800-\udbff]/.test(text[max - 1]!) ? max - 1 : max;
  return text.slice(0, end);
}

/**
 * The clientInfo a session keeps and passes on: its name, version and title (the strings among
 * them), each cut to MAX_INFO_CHARS; null when the client sent no object.
 */
export function clientInfo(value: unknown): Readonly<Record<string, string>> | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { name, version, title } = value as Record<string, unknown>;
  // Each field by its name, not in a loop over the names: stores by name are a shape's own
  // (a keyed store by a changing name costs V8's megamorphic path, on every modern request).
  const kept: { name?: string; version?: string; title?: string } = {};
  if (typeof name === 'string') kept.name = cut(name, MAX_INFO_CHARS);
  if (typeof version === 'string') kept.version = cut(version, MAX_INFO_CHARS);
  if (typeof title === 'string') kept.title = cut(title, MAX_INFO_CHARS);
  return kept;
}

/**
 * The log level a modern request asks for (`_meta` logLevel): one of MCP's, or null. It goes to
 * every modern backend the request reaches (a list goes to all of them), so nothing else does:
 * anything else is -32602.
 */
export function clientLogLevel(value: string | null): string | null {
  if (value === null || MCP_LOG_LEVELS.includes(value)) return value;
  throw new GatewayError('invalid_params', `Invalid params: _meta["${META.logLevel}"] must be one of ${MCP_LOG_LEVELS.join(', ')}`);
}

/** Capability groups whose presence the gateway reads, and the flags it reads in them. */
const SERVER_GROUPS = ['tools', 'prompts', 'resources', 'logging', 'completions'] as const;
const SERVER_FLAGS = ['listChanged', 'subscribe'] as const;
/** Groups passed on to the client as declared (merged), when small. */
const SERVER_PASSED_ON = ['tasks', 'experimental'] as const;

/** A backend's capabilities as a session keeps them (see the top of this file). */
export function serverCapabilities(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const given = value as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const group of SERVER_GROUPS) {
    const declared = given[group];
    if (declared === undefined) continue;
    const flags: Record<string, boolean> = {};
    if (typeof declared === 'object' && declared !== null) {
      for (const flag of SERVER_FLAGS) if ((declared as Record<string, unknown>)[flag] === true) flags[flag] = true;
    }
    kept[group] = flags;
  }
  for (const group of SERVER_PASSED_ON) {
    const declared = given[group];
    if (typeof declared === 'object' && declared !== null && !Array.isArray(declared) && jsonSize(declared, MAX_SERVER_PART_BYTES) !== Infinity) kept[group] = declared;
  }
  return kept;
}

/** A backend's instructions as a session keeps them: a string cut to MAX_INSTRUCTIONS_CHARS, or undefined. */
export function serverInstructions(value: unknown): string | undefined {
  return typeof value === 'string' ? cut(value, MAX_INSTRUCTIONS_CHARS) : undefined;
}
