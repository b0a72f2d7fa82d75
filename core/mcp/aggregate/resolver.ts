/**
 * The resolve step of an aggregated request: which backend a routed request goes to, and the
 * request as that backend gets it (its own name of the tool or prompt), which becomes
 * `ctx.target` before the onMessage hooks run. The method table (methods.ts) says what a method
 * is routed by: a tool's or prompt's name (the session's merged list), a resource URI (the
 * backend whose resources or templates serve it), a completion's ref, a task id (the backend that
 * created the task). A transparent endpoint's era bridge (`direct`) sends everything naming a
 * subject to its one backend as the client named it, as the transparent path does.
 *
 * With views (per-user policy, list-views.ts), every lookup is in the caller's lists, so a hidden
 * item is not found, exactly as one that does not exist; an answer names a backend only when the
 * views let the caller know it; and a found item is given to the views' admit steps (`subject`).
 */
import { performance } from 'node:perf_hooks';
import type { Context, MessageTarget } from '../../plugin-api/context.ts';
import type { ViewItem } from '../../plugin-api/view.ts';
import type { JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { mcpMethod } from '../../protocol/methods.ts';
import { directTarget } from '../intake.ts';
import { INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND } from './answer.ts';
import type { BackendLink } from './backend-link.ts';
import { prefixFor, type AggregationConfig } from '../../config/aggregation-config.ts';
import { isFresh, type ListCache } from './lists.ts';
import type { SessionLists } from './session-lists.ts';
import type { AggregatedSession } from './session.ts';

/** A routed request resolved: the backend, the request as that backend gets it, and ctx.target. */
export interface Routed {
  readonly link: BackendLink;
  readonly request: JsonRpcRequest;
  readonly target: MessageTarget;
  /** What the request names, for the views' admit steps; null when none admits, or it names no item (tasks). */
  readonly subject: ViewItem | null;
}

/** Why a routed request has no backend: the JSON-RPC error the client gets. */
export interface Unrouted {
  readonly code: number;
  readonly message: string;
  /** The item exists, but the caller's views hide it: answered as unknown, noted as a refusal by policy (for the audit trail). */
  readonly concealed?: boolean;
}

export type Resolution = Routed | Unrouted | null;

export interface ResolverOptions {
  readonly links: readonly BackendLink[];
  readonly byName: ReadonlyMap<string, BackendLink>;
  readonly aggregation: AggregationConfig;
  readonly lists: SessionLists;
  /** A transparent endpoint's bridge: its one backend (null: an aggregated group). */
  readonly direct: BackendLink | null;
  /** Backends a config reload removed (sessions may still call their tools): named when one is called. */
  readonly removedBackends: readonly string[];
  /** True when some view has an admit step: a routed request then carries its subject. */
  readonly admits: boolean;
}

export class Resolver {
  readonly #o: ResolverOptions;

  constructor(options: ResolverOptions) {
    this.#o = options;
  }

  /**
   * The backend a request goes to and the request as it gets it; an Unrouted error when the
   * request names what no backend of the session serves; null for a request the gateway
   * answers itself or sends to every backend.
   */
  resolve(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Resolution | Promise<Resolution> {
    const entry = mcpMethod(request.method);
    if (entry === undefined || !entry.routed) return null;
    if (this.#o.direct !== null && entry.subject !== null) return this.#direct(request);
    switch (entry.subject) {
      case 'name':
        return this.#byName(ctx, session, request, entry.subjectKind === 'tool' ? 'tools' : 'prompts');
      case 'uri':
        return this.#byUri(ctx, session, request);
      case 'ref':
        return this.#byRef(ctx, session, request);
      case null:
        return this.#byTask(session, request);
    }
  }

  /** A direct bridge's request: to its one backend, as the client named it. */
  #direct(request: JsonRpcRequest): Routed {
    const link = this.#o.direct!;
    return { link, request, target: directTarget(link.name, request)!, subject: null };
  }

  /** A tool or prompt by name. The usual case, a cached list and every backend joined: no promise. */
  #byName(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, kind: 'tools' | 'prompts'): Routed | Unrouted | Promise<Routed | Unrouted> {
    const cached = this.#o.lists.cached(ctx, session, kind);
    if (cached !== undefined) {
      const routed = this.#named(ctx, session, request, kind, cached);
      // A name a list past its freshness lacks: the backends may serve it by now.
      if (!('code' in routed) || isFresh(cached, performance.now())) return routed;
    }
    return this.#o.lists.list(ctx, session, kind, cached !== undefined).then((list) => this.#named(ctx, session, request, kind, list));
  }

  /** The backend of a tool or prompt the client names, and the request with the backend's own name. */
  #named(ctx: Context, session: AggregatedSession, request: JsonRpcRequest, kind: 'tools' | 'prompts', list: ListCache): Routed | Unrouted {
    const params = request.params ?? {};
    const name = params.name;
    const exposed = typeof name === 'string' ? list.names?.byName.get(name) : undefined;
    if (exposed === undefined) {
      const unknown = this.#unknown(ctx, session, kind === 'tools' ? 'tool' : 'prompt', String(name), list);
      return typeof name === 'string' && list.hidden?.has(name) === true ? { ...unknown, concealed: true } : unknown;
    }
    const sent = exposed.original === name ? request : { ...request, params: { ...params, name: exposed.original } };
    const subject = this.#o.admits ? { kind, backend: exposed.backend, name: exposed.name, original: exposed.original, item: exposed.item } : null;
    return { link: this.#o.byName.get(exposed.backend)!, request: sent, target: { backend: exposed.backend, name: exposed.original }, subject };
  }

  async #byUri(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<Routed | Unrouted> {
    const uri = typeof request.params?.['uri'] === 'string' ? request.params['uri'] : '';
    const owner = await this.#o.lists.resourceOwner(ctx, session, uri);
    if (owner === null) return { code: RESOURCE_NOT_FOUND, message: `Resource not found: ${uri}` };
    return { link: owner, request, target: { backend: owner.name, name: uri }, subject: this.#resource('resources', owner.name, uri) };
  }

  async #byRef(ctx: Context, session: AggregatedSession, request: JsonRpcRequest): Promise<Routed | Unrouted> {
    const ref = (request.params?.ref ?? {}) as { type?: string; name?: string; uri?: string };
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const exposed = (await this.#o.lists.list(ctx, session, 'prompts')).names?.byName.get(ref.name);
      if (exposed === undefined) return this.#unknown(ctx, session, 'prompt', ref.name);
      const routed = { ...request, params: { ...request.params, ref: { ...ref, name: exposed.original } } };
      const subject = this.#o.admits ? { kind: 'prompts' as const, backend: exposed.backend, name: exposed.name, original: exposed.original, item: exposed.item } : null;
      return { link: this.#o.byName.get(exposed.backend)!, request: routed, target: { backend: exposed.backend, name: exposed.original }, subject };
    }
    if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const templates = await this.#o.lists.list(ctx, session, 'resourceTemplates');
      const template = templates.templates?.find((t) => t.uriTemplate === ref.uri);
      const owner = template !== undefined ? this.#o.byName.get(template.backend) : await this.#o.lists.resourceOwner(ctx, session, ref.uri);
      if (owner === undefined || owner === null) return { code: INVALID_PARAMS, message: `Unknown resource template: ${ref.uri}` };
      return { link: owner, request, target: { backend: owner.name, name: ref.uri }, subject: this.#resource(template !== undefined ? 'resourceTemplates' : 'resources', owner.name, ref.uri) };
    }
    return { code: INVALID_PARAMS, message: 'completion/complete needs a ref/prompt name or a ref/resource uri' };
  }

  /** tasks/*: the backend that created the task (routed.ts notes it). */
  #byTask(session: AggregatedSession, request: JsonRpcRequest): Routed | Unrouted {
    const taskId = request.params?.['taskId'];
    const index = typeof taskId === 'string' ? session.tasks.get(taskId) : undefined;
    const link = index === undefined ? undefined : this.#o.links[index];
    if (link === undefined) return { code: INVALID_PARAMS, message: `Unknown task: ${String(taskId)}` };
    return { link, request, target: { backend: link.name, name: null }, subject: null };
  }

  /** A resource (by URI) or template a request names, as the views' admit steps see it. */
  #resource(kind: 'resources' | 'resourceTemplates', backend: string, uri: string): ViewItem | null {
    return this.#o.admits ? { kind, backend, name: uri, original: uri, item: kind === 'resources' ? { uri } : { uriTemplate: uri } } : null;
  }

  /**
   * A name no backend lists: unavailable when it has the prefix of a backend that is not in the
   * session now, or whose list just failed (so the client knows to try later), unknown otherwise.
   */
  #unknown(ctx: Context, session: AggregatedSession, what: 'tool' | 'prompt', name: string, list: ListCache | null = null): Unrouted {
    const { conflictResolution, prefixFormat } = this.#o.aggregation;
    if (conflictResolution === 'prefix') {
      for (const link of this.#o.links) {
        if (!name.startsWith(prefixFor(prefixFormat, link.name)) || !this.#o.lists.knowsBackend(ctx, link.name)) continue;
        const failed = list?.failures.get(link.name);
        if (session.has(link.name) && failed === undefined) continue;
        const reason = failed ?? session.absence(link.name)?.reason ?? `backend "${link.name}" is unavailable`;
        return { code: INTERNAL_ERROR, message: `${what} ${name} cannot be called now: ${reason}` };
      }
      // A session from before a reload may still call what a removed backend offered.
      for (const removed of this.#o.removedBackends) {
        if (name.startsWith(prefixFor(prefixFormat, removed)) && this.#o.lists.knowsBackend(ctx, removed)) return { code: INVALID_PARAMS, message: `Unknown ${what}: ${name} (backend "${removed}" was removed from the configuration)` };
      }
    }
    return { code: INVALID_PARAMS, message: `Unknown ${what}: ${name}` };
  }
}
