/**
 * Creating an aggregated session: every backend of the group is initialized in parallel (each
 * within its own timeout) with the client's parameters; the answers are merged into one
 * InitializeResult. With `partialFailureMode: bestEffort` (the default) a backend that fails is
 * left out and named in the instructions and the log; with `fail`, the client gets an error and
 * the backend sessions already opened are closed.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Context } from '../../plugin-api/context.ts';
import { GatewayError } from '../../base/errors.ts';
import { Reply } from '../../plugin-api/reply.ts';
import type { JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { reauthenticationAmong, type BackendLink, type MessageSink } from './backend-link.ts';
import type { FailureHandlingConfig } from '../../config/aggregation-config.ts';
import { serverInfo } from './modern-answers.ts';
import { modernRecord, type BackendProfiles } from './profiles.ts';
import { isModernVersion, LEGACY_VERSIONS, UNNAMED_CLIENT } from '../../protocol/era.ts';
import { clientCapabilities as declaredCapabilities, clientInfo as declaredClientInfo, serverCapabilities, serverInstructions } from './declarations.ts';
import { sharedCapabilities, sharedVersion } from './shared-declarations.ts';
import { AggregatedSession } from './session.ts';
import { mergeCapabilities, mergeInstructions, negotiateVersion } from './initialize-answer.ts';
import type { BackendSessionRecord, SessionRecord } from './session-store.ts';

const INTERNAL_ERROR = -32603;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** What MCP allows in a session id (0x21-0x7E), bounded; protocol versions are held to it too. */
const VISIBLE_ASCII = /^[\x21-\x7e]{1,256}$/;

export interface InitOptions {
  name: string;
  /** `session.maxSessionSize`: the most a session keeps of its client's capabilities, as JSON. */
  maxSessionBytes: number;
  links: readonly BackendLink[];
  profiles: BackendProfiles;
  failure: FailureHandlingConfig;
  sink: (link: BackendLink) => MessageSink;
  /** A backend failed its initialize (for the health monitor: a timeout, an answer past its bound, a 5xx...). */
  failed?: (link: BackendLink, err: unknown) => void;
  log: Logger;
  /** Whether the client may be told of a backend (plugin views): its instructions name only those. Absent or null: every one. */
  knows?: ((ctx: Context, backend: string) => boolean) | null;
}

interface Joined {
  link: BackendLink;
  record: BackendSessionRecord;
  instructions: unknown;
}

/**
 * Joins one backend to a session with the client's parameters: a legacy backend gets an
 * `initialize` (its own session); a modern one needs none, its discovery says what it serves.
 */
export async function initializeBackend(ctx: Context | null, link: BackendLink, params: Record<string, unknown>, sink: MessageSink | null, profiles: BackendProfiles, probed = false): Promise<Joined> {
  const profile = await profiles.of(ctx, link);
  if (profile.era === 'modern') return { link, record: modernRecord(profile), instructions: profile.instructions };
  const result = await link.call(ctx, null, { jsonrpc: '2.0', id: 'initialize', method: 'initialize', params }, sink);
  const response = result.response;
  if (response?.error?.code === UNSUPPORTED_PROTOCOL_VERSION && !probed) {
    // It refuses the legacy era: it became modern since the verdict (an upgrade). Once more, anew.
    profiles.forget(link.name);
    await profiles.probe(ctx, link, true).catch(() => null);
    return initializeBackend(ctx, link, params, sink, profiles, true);
  }
  const problem = link.problem(result, 'initialize');
  if (problem !== null && response?.error === undefined) throw problem;
  if (response?.error !== undefined) {
    throw new GatewayError('backend_error', `backend "${link.name}" refused initialize: ${response.error.message}`, { extra: { backend: link.name } });
  }
  const init = response?.result as { protocolVersion?: unknown; capabilities?: unknown; instructions?: unknown } | undefined;
  if (init === undefined || typeof init.protocolVersion !== 'string') {
    throw new GatewayError('backend_error', `backend "${link.name}" answered initialize without a protocol version`, { extra: { backend: link.name } });
  }
  // Both go back to the backend as header values on every request of the session.
  if (!VISIBLE_ASCII.test(init.protocolVersion)) {
    throw new GatewayError('backend_error', `backend "${link.name}" answered initialize with a protocol version that is not a header-safe token`, { extra: { backend: link.name } });
  }
  if (result.sessionId !== null && !VISIBLE_ASCII.test(result.sessionId)) {
    throw new GatewayError('backend_error', `backend "${link.name}" sent an Mcp-Session-Id that is not visible ASCII (MCP requires it)`, { extra: { backend: link.name } });
  }
  // Kept for the session's life (and in Redis): only what the gateway reads (declarations.ts).
  // Held once for every session that got the same (shared-declarations.ts).
  const capabilities = sharedCapabilities(serverCapabilities(init.capabilities));
  return { link, record: { sessionId: result.sessionId, protocolVersion: sharedVersion(init.protocolVersion), capabilities }, instructions: serverInstructions(init.instructions) };
}

/**
 * Confirms a legacy backend's session (`notifications/initialized`); a modern backend has none.
 * A legacy client sends its own, which reaches every backend; the gateway sends it for the
 * sessions it opens itself (healing, a modern client's implicit session). Servers act on it:
 * server-everything registers its tools that depend on the client's capabilities only then.
 */
export async function confirmBackendSession(ctx: Context | null, link: BackendLink, backend: BackendSessionRecord): Promise<void> {
  if (backend.sessionId === null && isModernVersion(backend.protocolVersion)) return;
  await link.call(ctx, backend, { jsonrpc: '2.0', method: 'notifications/initialized' });
}

/** A backend joined to a modern client's implicit session, its session confirmed (closed again if that fails). */
async function joinConfirmed(ctx: Context, link: BackendLink, params: Record<string, unknown>, sink: MessageSink, profiles: BackendProfiles): Promise<Joined> {
  const joined = await initializeBackend(ctx, link, params, sink, profiles);
  try {
    await confirmBackendSession(ctx, link, joined.record);
  } catch (err) {
    void link.remove(ctx, joined.record).catch(() => undefined);
    throw err;
  }
  return joined;
}

/** What the client is told of a failure: a GatewayError's description, else the error's message. */
export function reasonOf(err: unknown): string {
  return (err as GatewayError).description ?? (err as Error).message ?? String(err);
}

/** What every backend of a new session is initialized with: what the session keeps of its client. */
interface ClientDeclaration {
  readonly protocolVersion: string;
  readonly capabilities: Readonly<Record<string, unknown>>;
  readonly clientInfo: unknown;
}

/**
 * What the session keeps of the client, bounded (declarations.ts), is what every backend gets,
 * now and when it joins again later (healing.ts): a modern client's legacy backends are
 * initialized with what its requests declare (checked as they came in), the others with the
 * client's initialize; its other params (_meta) are not passed on.
 */
function declarationOf(ctx: Context, request: JsonRpcRequest, maxSessionBytes: number, implicit: boolean): ClientDeclaration {
  const envelope = ctx.envelope;
  if (implicit && envelope !== null) return { protocolVersion: LEGACY_VERSIONS[0]!, capabilities: envelope.capabilities, clientInfo: envelope.clientInfo ?? UNNAMED_CLIENT };
  const given = request.params ?? {};
  return {
    protocolVersion: negotiateVersion(given.protocolVersion),
    capabilities: declaredCapabilities(given.capabilities, maxSessionBytes, 'params.capabilities'),
    clientInfo: declaredClientInfo(given.clientInfo),
  };
}

/** Every backend's answer: the ones that joined, and the ones that did not, with why. */
interface Joining {
  readonly joined: Joined[];
  readonly missing: { name: string; reason: string }[];
}

/** Every backend initialized in parallel; the caller's refused credentials end the ones opened and answer the whole request. */
async function joinAll(ctx: Context, options: InitOptions, declaration: ClientDeclaration, implicit: boolean): Promise<Joining> {
  const { clientInfo } = declaration;
  const params = { protocolVersion: declaration.protocolVersion, capabilities: declaration.capabilities, ...(clientInfo === null ? {} : { clientInfo }) };
  const open = implicit ? joinConfirmed : initializeBackend;
  const outcomes = await Promise.allSettled(options.links.map((link) => open(ctx, link, params, options.sink(link), options.profiles)));
  const joining: Joining = { joined: [], missing: [] };
  outcomes.forEach((outcome, i) => {
    if (outcome.status === 'fulfilled') joining.joined.push(outcome.value);
    else {
      joining.missing.push({ name: options.links[i]!.name, reason: reasonOf(outcome.reason) });
      options.failed?.(options.links[i]!, outcome.reason);
    }
  });
  const refusal = reauthenticationAmong(outcomes);
  if (refusal !== undefined) {
    await Promise.allSettled(joining.joined.map((j) => j.link.remove(ctx, j.record)));
    throw refusal;
  }
  return joining;
}

/**
 * With backends missing: the session goes on without them (bestEffort), or, with `fail` (or none
 * joined), the ones opened end and the client gets an error naming the missing ones; null: go on.
 */
async function refusedForMissing(ctx: Context, request: JsonRpcRequest, options: InitOptions, { joined, missing }: Joining): Promise<Reply | null> {
  if (missing.length === 0) return null;
  options.log.warn({ missing, requestId: ctx.requestId }, `initialize: ${missing.length} backend(s) unavailable`);
  if (options.failure.partialFailureMode !== 'fail' && joined.length > 0) return null;
  await Promise.allSettled(joined.map((j) => j.link.remove(ctx, j.record)));
  const told = missing.filter((m) => options.knows?.(ctx, m.name) ?? true);
  const what = told.length === 0 ? '' : `: ${told.map((m) => `${m.name} (${m.reason})`).join('; ')}`;
  return Reply.rpcError(request.id, INTERNAL_ERROR, joined.length === 0 ? `no backend is available${what}` : `backends unavailable${what}`, { missing: told.map((m) => m.name) });
}

/** The `missing` of every session that has all its backends (shared: a record is never changed in place). */
const NONE_MISSING: readonly string[] = Object.freeze([]);

/**
 * A new session: the client's `initialize` (legacy), or, with `implicitId`, the session the
 * gateway holds for a modern client's requests (the backend sessions of its legacy backends),
 * keyed by who the client is and what it declared.
 */
export async function initializeSession(
  ctx: Context,
  request: JsonRpcRequest,
  options: InitOptions,
  implicitId: string | null = null,
): Promise<Reply | { session: AggregatedSession; result: Record<string, unknown> }> {
  const declaration = declarationOf(ctx, request, options.maxSessionBytes, implicitId !== null);
  const joining = await joinAll(ctx, options, declaration, implicitId !== null);
  const refused = await refusedForMissing(ctx, request, options, joining);
  if (refused !== null) return refused;
  const { joined, missing } = joining;
  const principal = ctx.principal;
  const record: SessionRecord = {
    v: 2,
    id: implicitId ?? randomBytes(24).toString('base64url'),
    ...(implicitId === null ? {} : { modern: true as const }),
    owner: principal === null ? null : { issuer: principal.issuer, subject: principal.subject },
    createdAt: Date.now(),
    protocolVersion: declaration.protocolVersion,
    clientInfo: declaration.clientInfo,
    clientCapabilities: declaration.capabilities,
    backends: Object.fromEntries(joined.map((j) => [j.link.name, j.record])),
    missing: missing.length === 0 ? NONE_MISSING : missing.map((m) => m.name),
  };
  const session = new AggregatedSession(record);
  const now = performance.now();
  for (const { name, reason } of missing) session.absent(name, reason, now);
  const result: Record<string, unknown> = {
    protocolVersion: declaration.protocolVersion,
    capabilities: mergeCapabilities(
      joined.map((j) => j.record.capabilities),
      missing.length > 0,
    ),
    serverInfo: serverInfo(options.name),
    // Names only the backends the client may be told of (plugin views): none other is disclosed.
    instructions: mergeInstructions(
      options.name,
      joined.filter((j) => options.knows?.(ctx, j.link.name) ?? true).map((j) => ({ name: j.link.name, instructions: j.instructions })),
      missing.filter((m) => options.knows?.(ctx, m.name) ?? true),
    ),
  };
  // The session keeps an equal object, shared by the sessions that got the same (the answer's own
  // goes to the hooks, which may change it).
  session.initializeCapabilities = sharedCapabilities(mergeCapabilities(joined.map((j) => j.record.capabilities), missing.length > 0));
  // Kept only when server/discover could not make them again from the session alone (modern-answers.ts):
  // a backend's own instructions, or why one was missing.
  if (missing.length > 0 || joined.some((j) => j.instructions !== undefined)) {
    session.instructionParts = { joined: joined.map((j) => ({ name: j.link.name, instructions: j.instructions })), missing };
  }
  return { session, result };
}
