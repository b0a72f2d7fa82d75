/**
 * Every MCP method the gateway treats in a way of its own, written once: what kind of message it
 * is, which of its params names its subject (the tool, prompt or resource it is about), whether
 * an aggregated gateway routes it to the one backend that serves that subject, in which
 * generations of MCP it exists, and what the 2026-07-28 rules ask of it. Framing (`Mcp-Name`),
 * intake (`ctx.target`), routing, the era rules, the input relay, list caching and the access
 * log all read this table, so a method is described in one place.
 *
 * A method missing here is a plain request (routed nowhere: answered "method not found" by an
 * aggregated gateway, passed through by a transparent one) or a notification, by its id.
 * Lookups go through `mcpMethod`: a method name is chosen by a client or a backend, and
 * `constructor` or `__proto__` must find nothing (a Map of the table).
 */
import type { JsonRpcMessage } from './jsonrpc.ts';

/** The lists an aggregated session merges and caches. */
export type ListKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

/** What a subject is, as the access log and the errors name it. */
export type SubjectKind = 'tool' | 'prompt' | 'resource';

export interface McpMethod {
  /**
   * `request`: a client's request a backend answers; `list`: a list the gateway merges;
   * `own`: a request an aggregated gateway answers itself (or sends to every backend);
   * `server-request`: a backend's request to the client; `notification`: no answer.
   */
  readonly kind: 'request' | 'list' | 'own' | 'server-request' | 'notification';
  /**
   * The params field that names the subject: `name`, `uri`, or `ref` (completion/complete: its
   * `ref.name` for a prompt, `ref.uri` for a resource); null when the method is about nothing.
   */
  readonly subject: 'name' | 'uri' | 'ref' | null;
  /** What the subject is (`ref`: decided by the ref's type). */
  readonly subjectKind: SubjectKind | null;
  /** An aggregated gateway sends it to the one backend that serves its subject (tasks/*: the task's). */
  readonly routed: boolean;
  /**
   * 2026-07-28's `Mcp-Name` header: `required` on a modern request, `mirrors` when sent (it must
   * then equal the subject), null when the method has none.
   */
  readonly mcpName: 'required' | 'mirrors' | null;
  /** The generations it exists in: `legacy` ones only (2025-06-18, 2025-11-25), or every one. */
  readonly eras: 'all' | 'legacy';
  /** A 2026-07-28 server may answer it `input_required` (and a legacy one ask the client during it). */
  readonly askable: boolean;
  /** A `list` method's list, or the list a `notifications/.../list_changed` says changed. */
  readonly list: ListKind | null;
  /** A server request: the client capability that lets it be asked. */
  readonly capability: string | null;
}

const base: McpMethod = { kind: 'request', subject: null, subjectKind: null, routed: false, mcpName: null, eras: 'all', askable: false, list: null, capability: null };

const named = (subjectKind: SubjectKind, subject: 'name' | 'uri'): McpMethod => ({ ...base, subject, subjectKind, routed: true, mcpName: 'required', askable: true });
const list = (kind: ListKind): McpMethod => ({ ...base, kind: 'list', list: kind });
const own = (eras: McpMethod['eras']): McpMethod => ({ ...base, kind: 'own', eras });
const subscription: McpMethod = { ...base, subject: 'uri', subjectKind: 'resource', routed: true, mcpName: 'mirrors', eras: 'legacy' };
const task: McpMethod = { ...base, routed: true };
const changed = (kind: ListKind): McpMethod => ({ ...base, kind: 'notification', list: kind });
const asks = (capability: string): McpMethod => ({ ...base, kind: 'server-request', capability });

export const METHODS: Readonly<Record<string, McpMethod>> = {
  initialize: own('legacy'),
  ping: own('legacy'),
  'logging/setLevel': own('legacy'),
  'server/discover': own('all'),
  'subscriptions/listen': own('all'),
  'tools/list': list('tools'),
  'prompts/list': list('prompts'),
  'resources/list': list('resources'),
  'resources/templates/list': list('resourceTemplates'),
  'tools/call': named('tool', 'name'),
  'prompts/get': named('prompt', 'name'),
  'resources/read': named('resource', 'uri'),
  'resources/subscribe': subscription,
  'resources/unsubscribe': subscription,
  'completion/complete': { ...base, subject: 'ref', routed: true },
  'tasks/get': task,
  'tasks/result': task,
  'tasks/cancel': task,
  'sampling/createMessage': asks('sampling'),
  'elicitation/create': asks('elicitation'),
  'roots/list': asks('roots'),
  'notifications/tools/list_changed': changed('tools'),
  'notifications/prompts/list_changed': changed('prompts'),
  'notifications/resources/list_changed': changed('resources'),
};

/**
 * METHODS as a Map, for mcpMethod: a Map finds only its own entries (never `constructor` or
 * `__proto__`), and its lookup of a parsed method name costs a third of Object.hasOwn and a
 * keyed load (several times a request, aggregated).
 */
const BY_NAME: ReadonlyMap<string, McpMethod> = new Map(Object.entries(METHODS));

/** The table's entry for `method` (a name a client or a backend chose), or undefined. */
export function mcpMethod(method: string): McpMethod | undefined {
  return BY_NAME.get(method);
}

/** What a message is about, as its sender named it: the subject's kind and name, or null. */
export interface Subject {
  readonly kind: SubjectKind;
  readonly name: string;
}

/** The subject of `message` (a request or notification naming a tool, prompt or resource), or null. */
export function subjectOf(message: JsonRpcMessage | JsonRpcMessage[] | null): Subject | null {
  if (message === null || Array.isArray(message) || !('method' in message)) return null;
  const entry = mcpMethod(message.method);
  if (entry === undefined || entry.subject === null) return null;
  const params = message.params;
  if (entry.subject === 'ref') {
    const ref = params?.['ref'] as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
    const prompt = ref?.type === 'ref/prompt';
    const name = prompt ? ref.name : ref?.uri;
    return typeof name === 'string' ? { kind: prompt ? 'prompt' : 'resource', name } : null;
  }
  const name = params?.[entry.subject];
  return typeof name === 'string' ? { kind: entry.subjectKind!, name } : null;
}

/** Each list a server may announce as changed, with the notification that says so (kind `notification`, `list` set). */
export const LIST_CHANGED_NOTIFICATIONS: readonly (readonly [list: ListKind, method: string])[] = Object.entries(METHODS).flatMap(([method, entry]) =>
  entry.kind === 'notification' && entry.list !== null ? [[entry.list, method] as const] : [],
);

/** The value 2026-07-28's `Mcp-Name` header must mirror for `message`, or undefined when it has none. */
export function mcpNameOf(message: JsonRpcMessage): string | undefined {
  if (!('method' in message)) return undefined;
  const entry = mcpMethod(message.method);
  if (entry === undefined || entry.mcpName === null || entry.subject === null || entry.subject === 'ref') return undefined;
  const value = message.params?.[entry.subject];
  return typeof value === 'string' ? value : undefined;
}
