/**
 * The plugin chain, compiled once at start into one array per phase. A phase no plugin uses is
 * `null`, so a disabled feature costs the request one branch and nothing else: nothing is
 * sorted, filtered or allocated per request.
 *
 * The phases, in the fixed order they run (plugins run in the order they are listed):
 *
 *  1. authenticate    Who is calling. Runs first, on headers only, so that an anonymous caller
 *                     cannot make the gateway read (up to the cap of) a body it will refuse.
 *  2. authorize       May this caller use this endpoint at all. Still before the body: decisions
 *                     that need only the principal are cheapest here.
 *  3. onMessage       Each parsed, validated JSON-RPC message: per-tool policy, auditing,
 *                     rewriting. Runs before routing so that a refusal never reaches a backend.
 *  4. prepareBackend  Per backend, compiled per backend at start: outgoing credentials (inject,
 *                     token exchange). Last before the wire, so that no earlier phase ever sees
 *                     a backend credential.
 *  5. onResponse      The backend's JSON-RPC response to a hooked method, before the client sees
 *                     it. Methods nobody hooks are piped through byte for byte.
 *
 * Beside the phases, a plugin's `view` (plugin-api/view.ts) decides what a caller sees of the
 * group: asked when a list is built for a caller, and, with `admit`, for each call of an item
 * the caller sees, just before the onMessage hooks (a refusal never reaches a hook or a backend).
 */
import { performance } from 'node:perf_hooks';
import type { BackendInfo } from '../plugin-api/backend.ts';
import type { Context } from '../plugin-api/context.ts';
import type { JsonRpcResponse } from '../protocol/jsonrpc.ts';
import type { Observe } from '../observe/metrics.ts';
import type {
  BackendHook,
  HookResult,
  MessageHook,
  Plugin,
  RequestHook,
  ResponseHook,
  RouteDef,
} from '../plugin-api/plugin.ts';
import type { View } from '../plugin-api/view.ts';
import { isPromise } from '../base/thenable.ts';

export type HookOutcome = HookResult | void;

export type PhaseTimer = (plugin: string, phase: string) => Observe | null;

/**
 * Runs `hooks` in order until one answers. Stays synchronous while the hooks are; switches to a
 * promise only from the first hook that returns one.
 */
export function runHooks<A>(
  hooks: readonly ((ctx: Context, arg: A) => unknown)[],
  ctx: Context,
  arg: A,
  from = 0,
): HookOutcome | Promise<HookOutcome> {
  for (let i = from; i < hooks.length; i++) {
    const result = hooks[i]!(ctx, arg);
    if (result === undefined) continue;
    if (isPromise(result)) {
      return result.then((settled) => (settled === undefined ? runHooks(hooks, ctx, arg, i + 1) : (settled as HookOutcome)));
    }
    return result as HookOutcome;
  }
  return undefined;
}

/**
 * Runs response hooks in order, each seeing the previous one's replacement. Sync while they are.
 */
export function runResponseHooks(
  hooks: readonly ResponseHook[],
  ctx: Context,
  response: JsonRpcResponse,
  from = 0,
): JsonRpcResponse | Promise<JsonRpcResponse> {
  let current = response;
  for (let i = from; i < hooks.length; i++) {
    const result = hooks[i]!(ctx, current);
    if (result === undefined) continue;
    if (isPromise(result)) {
      const before = current;
      return result.then((settled) => runResponseHooks(hooks, ctx, settled ?? before, i + 1));
    }
    current = result;
  }
  return current;
}

/**
 * Wraps a hook so its time lands in the per-plugin, per-phase histogram, and, while the request
 * is observed (ctx.record), in the request's phases for the seam. Done once, at compile.
 */
function timed<F extends (ctx: Context, arg: never) => unknown>(hook: F, observe: Observe | null, plugin: string, phase: string): F {
  // An onResponse hook's value replaces the response; any other hook's value is its answer (a refusal).
  const answers = phase !== 'onResponse';
  const done = (ctx: Context, start: number, failed: boolean): void => {
    const seconds = (performance.now() - start) / 1000;
    observe?.(seconds);
    (ctx as Context | null)?.record?.phase(plugin, phase, start, seconds, failed);
  };
  // Every hook takes (ctx) or (ctx, arg): two parameters, not a rest array spread into the call
  // (an array and a spread call per hook per request).
  const call = hook as unknown as (ctx: Context, arg: unknown) => unknown;
  const wrapped = (ctx: Context, arg: unknown): unknown => {
    const start = performance.now();
    let result: unknown;
    try {
      result = call(ctx, arg);
    } catch (err) {
      done(ctx, start, true);
      throw err;
    }
    if (isPromise(result)) {
      return result.then(
        (settled) => {
          done(ctx, start, answers && settled !== undefined);
          return settled;
        },
        (err: unknown) => {
          done(ctx, start, true);
          throw err;
        },
      );
    }
    done(ctx, start, answers && result !== undefined);
    return result;
  };
  return wrapped as unknown as F;
}

function orNull<T>(list: T[]): T[] | null {
  return list.length === 0 ? null : list;
}

interface MethodTable<H> {
  /** Hooks for every method (plain function form). */
  all: H[];
  /** Method → hooks for that method, merged with `all` in plugin order. */
  byMethod: Map<string, H[]>;
}

export interface CompiledRoute extends RouteDef {
  readonly plugin: string;
}

export class Chain {
  readonly plugins: readonly Plugin[];
  readonly authenticate: RequestHook[] | null;
  readonly authorize: RequestHook[] | null;
  readonly routes: readonly CompiledRoute[];
  readonly #messages: MethodTable<MessageHook>;
  readonly #messagesAll: MessageHook[] | null;
  readonly #responses: Map<string, ResponseHook[]>;
  readonly #backendHooks = new Map<string, BackendHook[] | null>();
  readonly #timer: PhaseTimer;
  /** True when some onMessage or onResponse hook exists: messages must then be looked into. */
  readonly seesMessages: boolean;
  /** The plugins' views, in plugin order; null when no plugin filters what callers see. */
  readonly views: readonly View[] | null;

  constructor(plugins: readonly Plugin[], timer: PhaseTimer) {
    this.plugins = plugins;
    this.#timer = timer;
    const authenticate: RequestHook[] = [];
    const authorize: RequestHook[] = [];
    const routes: CompiledRoute[] = [];
    const messageEntries: { methods: readonly string[] | null; hook: MessageHook }[] = [];
    const responses = new Map<string, ResponseHook[]>();

    const views: View[] = [];
    for (const plugin of plugins) {
      if (plugin.view) views.push(plugin.view);
      if (plugin.authenticate) authenticate.push(timed(plugin.authenticate, timer(plugin.name, 'authenticate'), plugin.name, 'authenticate'));
      if (plugin.authorize) authorize.push(timed(plugin.authorize, timer(plugin.name, 'authorize'), plugin.name, 'authorize'));
      if (plugin.onMessage) {
        const spec = plugin.onMessage;
        const isFn = typeof spec === 'function';
        const hook = timed(isFn ? spec : spec.handle, timer(plugin.name, 'onMessage'), plugin.name, 'onMessage');
        messageEntries.push({ methods: isFn ? null : spec.methods, hook });
      }
      if (plugin.onResponse) {
        const hook = timed(plugin.onResponse.handle, timer(plugin.name, 'onResponse'), plugin.name, 'onResponse');
        for (const method of plugin.onResponse.methods) {
          const list = responses.get(method) ?? [];
          list.push(hook);
          responses.set(method, list);
        }
      }
      for (const route of plugin.routes ?? []) routes.push({ ...route, plugin: plugin.name });
    }

    this.authenticate = orNull(authenticate);
    this.authorize = orNull(authorize);
    this.routes = routes;
    this.#messages = compileMethodTable(messageEntries);
    this.#messagesAll = orNull(this.#messages.all);
    this.#responses = responses;
    this.views = orNull(views);
    this.seesMessages = this.hasMessageHooks || responses.size > 0;
  }

  /** The onMessage hooks for `method` (null when none): one Map lookup per message. */
  messageHooks(method: string | null): MessageHook[] | null {
    if (method !== null && this.#messages.byMethod.size > 0) {
      const hooks = this.#messages.byMethod.get(method);
      if (hooks !== undefined) return hooks;
    }
    return this.#messagesAll;
  }

  /** True when some onMessage hook exists at all (the body must then be inspected per message). */
  get hasMessageHooks(): boolean {
    return this.#messagesAll !== null || this.#messages.byMethod.size > 0;
  }

  /** True when some onResponse hook exists at all. */
  get hasResponseHooks(): boolean {
    return this.#responses.size > 0;
  }

  /** The onResponse hooks for `method`, or null: the response is then piped through untouched. */
  responseHooks(method: string | null): ResponseHook[] | null {
    if (method === null || this.#responses.size === 0) return null;
    return this.#responses.get(method) ?? null;
  }

  /** Compiles (once per backend, at start) the prepareBackend hooks that apply to `backend`. */
  compileBackend(backend: BackendInfo): BackendHook[] | null {
    const hooks: BackendHook[] = [];
    for (const plugin of this.plugins) {
      const hook = plugin.prepareBackend?.(backend) ?? null;
      if (hook !== null) hooks.push(timed(hook, this.#timer(plugin.name, 'prepareBackend'), plugin.name, 'prepareBackend'));
    }
    const compiled = orNull(hooks);
    this.#backendHooks.set(backend.name, compiled);
    return compiled;
  }

  backendHooks(backend: BackendInfo): BackendHook[] | null {
    const hooks = this.#backendHooks.get(backend.name);
    return hooks === undefined ? this.compileBackend(backend) : hooks;
  }
}

function compileMethodTable(entries: { methods: readonly string[] | null; hook: MessageHook }[]): MethodTable<MessageHook> {
  const all = entries.filter((e) => e.methods === null).map((e) => e.hook);
  const methods = new Set<string>();
  for (const entry of entries) for (const method of entry.methods ?? []) methods.add(method);
  const byMethod = new Map<string, MessageHook[]>();
  for (const method of methods) {
    // Keep plugin order: a method-specific hook runs where its plugin is listed, among the generic ones.
    byMethod.set(
      method,
      entries.filter((e) => e.methods === null || e.methods.includes(method)).map((e) => e.hook),
    );
  }
  return { all, byMethod };
}

