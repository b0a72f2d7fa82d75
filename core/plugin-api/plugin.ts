/**
 * The plugin contract. A plugin is a named factory: it validates its own config at start and
 * returns the hooks and routes it contributes. Built-in plugins and user plugins use exactly
 * this contract. See the plugin guide, plugins/README.md, and `examples/plugins/`.
 *
 * Hooks return `undefined` to continue, or a `Reply` / `GatewayError` to answer the request
 * right there. A sync hook stays sync: the runner awaits only when a hook returns a promise.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ZodType } from 'zod';
import type { BackendInfo } from './backend.ts';
import type { Context } from './context.ts';
import type { AuthChallenge, GatewayError } from '../base/errors.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc.ts';
import type { OutgoingHeaders } from './outgoing-headers.ts';
import type { Reply } from './reply.ts';
import type { View } from './view.ts';

export type HookResult = Reply | GatewayError | undefined;
export type MaybePromise<T> = T | Promise<T>;

/** authenticate / authorize: runs before the body is read (headers only). */
export type RequestHook = (ctx: Context) => MaybePromise<HookResult | void>;

/** onMessage: each JSON-RPC message of a POST to the MCP endpoint, after parsing and validation. */
export type MessageHook = (ctx: Context, message: JsonRpcMessage) => MaybePromise<HookResult | void>;

/** prepareBackend: sets the outgoing credentials of one backend request. */
export type BackendHook = (ctx: Context, headers: OutgoingHeaders) => MaybePromise<HookResult | void>;

/** onResponse: sees (and may replace) a backend's JSON-RPC response to a request of a hooked method. */
export type ResponseHook = (ctx: Context, response: JsonRpcResponse) => MaybePromise<JsonRpcResponse | void>;

/** A hook that runs only for the listed JSON-RPC methods. */
export interface MethodHook<H> {
  readonly methods: readonly string[];
  readonly handle: H;
}

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/** A route a plugin serves itself (well-known documents, OAuth endpoints, the registry API). */
export interface RouteDef {
  readonly method: HttpMethod | readonly HttpMethod[];
  /** `/static/path`, or segments with `:param` (a param matches one segment, percent-decoded). */
  readonly path: string;
  /** Whether authenticate and authorize run before the handler (default true). */
  readonly auth?: boolean;
  /**
   * A public document any web origin may read (protected resource metadata, discovery): the
   * Origin check is skipped (Host is still checked) and the handler sets its own CORS headers.
   */
  readonly anyOrigin?: boolean;
  /** Returns the response, or undefined when it wrote to `ctx.res` itself. */
  readonly handler: (ctx: Context) => MaybePromise<Reply | GatewayError | undefined | void>;
}

export interface Plugin {
  readonly name: string;
  readonly routes?: readonly RouteDef[];
  readonly authenticate?: RequestHook;
  readonly authorize?: RequestHook;
  readonly onMessage?: MessageHook | MethodHook<MessageHook>;
  /** Called once per backend at start: return the hook for that backend, or null when it does not apply. */
  readonly prepareBackend?: (backend: BackendInfo) => BackendHook | null;
  readonly onResponse?: MethodHook<ResponseHook>;
  /** Which tools, prompts and resources a caller sees and may use (view.ts). */
  readonly view?: View;
  start?(): MaybePromise<void>;
  stop?(): MaybePromise<void>;
}

/** What a plugin factory is given at start. */
export interface PluginHost {
  readonly log: Logger;
  readonly metrics: Registry;
  /** The MCP endpoint path (vMCP), or null (registry server). */
  readonly mcpPath: string | null;
  readonly backends: readonly BackendInfo[];
  /** Directory of the config file: relative paths in plugin config resolve against it. */
  readonly configDir: string;
  /**
   * The application the plugin runs in, as an opaque identity: an event the plugin publishes on
   * the seam (`publishAuthEvent`, `publishRegistryChange`) carries it as `origin`, so that the
   * audit trail of this application, and only it, records the event (the channels are the process's).
   */
  readonly origin: object;
  /** Sets the RFC 6750 / RFC 9728 challenge written on every 401 (one auth plugin per gateway). */
  setAuthChallenge(challenge: AuthChallenge): void;
}

export interface PluginDefinition<C = unknown> {
  readonly name: string;
  /** Schema of the plugin's config; problems are reported with the YAML path of the plugin's config. */
  readonly config?: ZodType<C>;
  /**
   * The instance outlives a config reload (state a new one could not rebuild: the embedded
   * authorization server's clients, codes and tokens in memory). The reloaded generation takes
   * the serving one's instance of the same definition as it is, started, instead of creating
   * one; the composition root must refuse a reload that would give it another config.
   */
  readonly keptAcrossReloads?: boolean;
  create(config: C, host: PluginHost): MaybePromise<Plugin>;
}

/** Identity function that gives a plugin definition its types. */
export function definePlugin<C = undefined>(definition: PluginDefinition<C>): PluginDefinition<C> {
  return definition;
}
