/**
 * The Cedar authorizer as a gateway view (core's `View`): which tools, prompts and resources a
 * caller sees, and whether a call of one it sees may go on with its arguments.
 *
 * - **Who**: the principal `Client::"<sub>"` of the token's claims; with anonymous incoming auth
 *   ToolHive's anonymous principal, `Client::"anonymous"` with the claims ToolHive gives it
 *   (`pkg/auth/anonymous.go`, its times left out: they change every request).
 * - **key**: a digest of what the policies can read of the caller (engine.ts `callerKey`),
 *   worked out once per claims object (a cached token's claims are one object).
 * - **visible**: per item, the list decision (`call_tool` on `Tool::"<name>"`, `get_prompt` on
 *   `Prompt::"<name>"`, `read_resource` on `Resource::"<uri>"`, a resource template on its URI
 *   template, as ToolHive's vMCP filters templates), with the name the client sees: ToolHive's
 *   vMCP decides on the advertised name (after prefixing or renaming), not the backend's.
 * - **admit**: a call decided with its arguments (`tools/call`, `prompts/get`), only where
 *   arguments can change the decision; a read decided on the URI read, as ToolHive's vMCP does
 *   (the gateway asks `visible` about a URI a template serves, so its decision is in the cache);
 *   a completion of a resource by a URI other than its template's. Everything else was decided
 *   with the list: `undefined`, at once.
 * - **knowsBackend** is absent (never): Cedar has no backend entity, and ToolHive's vMCP shows a
 *   backend only through the capabilities it admits, which a down backend has none of.
 */
import type { Context, HookResult, JsonRpcRequest, View, ViewItem } from '@gatehouse-mcp/gateway';
import type { CedarAuthorizer, CedarCaller } from './engine.ts';
import { policyDenied } from './errors.ts';
import type { CedarAction, ToolAnnotations } from './request.ts';

/** ToolHive's anonymous identity's claims (`AnonymousMiddleware`), without exp, iat and nbf. */
export const ANONYMOUS_CLAIMS: Readonly<Record<string, unknown>> = Object.freeze({
  sub: 'anonymous',
  iss: 'toolhive-local',
  aud: 'toolhive',
  email: 'anonymous@localhost',
  name: 'Anonymous User',
});

const ANONYMOUS: CedarCaller = { claims: ANONYMOUS_CLAIMS };

/** The action that decides whether a caller sees an item of each list. */
const LIST_ACTIONS: Readonly<Record<ViewItem['kind'], CedarAction>> = {
  tools: 'call_tool',
  prompts: 'get_prompt',
  resources: 'read_resource',
  resourceTemplates: 'read_resource',
};

const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/** A tool's annotations as its backend listed them: the four hints that are booleans. */
function annotationsOf(item: ViewItem): ToolAnnotations | undefined {
  if (item.kind !== 'tools' || typeof item.item !== 'object' || item.item === null) return undefined;
  const annotations = (item.item as { annotations?: unknown }).annotations;
  if (typeof annotations !== 'object' || annotations === null) return undefined;
  const hints: Record<string, boolean> = {};
  for (const hint of HINTS) {
    const value = (annotations as Record<string, unknown>)[hint];
    if (typeof value === 'boolean') hints[hint] = value;
  }
  return hints;
}

/** A call's arguments when they are an object (anything else is none, as a Go map decodes it). */
function argumentsOf(request: JsonRpcRequest): Readonly<Record<string, unknown>> | null {
  const args = request.params?.['arguments'];
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : null;
}

/**
 * The URI a resource request or a completion of a resource names, to be decided: a read's always
 * (the gateway gives a read of a template's expansion as the URI read, which no list decided
 * on), a completion's unless it is the template's own.
 */
function uriOf(item: ViewItem, request: JsonRpcRequest): string | null {
  const params = request.params;
  let uri: unknown;
  if (request.method === 'completion/complete') {
    const ref = params?.['ref'];
    uri = typeof ref === 'object' && ref !== null && (ref as { type?: unknown }).type === 'ref/resource' ? (ref as { uri?: unknown }).uri : undefined;
    if (item.kind === 'resourceTemplates' && uri === item.name) return null;
  } else uri = params?.['uri'];
  return typeof uri === 'string' ? uri : null;
}

export interface CedarViewOptions {
  /** incomingAuth is anonymous: a request without a principal is ToolHive's anonymous one (else it sees nothing). */
  readonly anonymous: boolean;
}

export function cedarView(authorizer: CedarAuthorizer, options: CedarViewOptions): View {
  const callerOf = (ctx: Context): CedarCaller | null => ctx.principal ?? (options.anonymous ? ANONYMOUS : null);

  const admitCall = (caller: CedarCaller, item: ViewItem, action: CedarAction, request: JsonRpcRequest): HookResult => {
    if (!authorizer.dependsOnArguments(action, item.name)) return undefined;
    const decision = authorizer.decide(caller, action, item.name, argumentsOf(request), annotationsOf(item));
    return decision === 'allow' ? undefined : policyDenied(action);
  };

  return {
    key(ctx) {
      const caller = callerOf(ctx);
      return caller === null ? 'no-principal' : authorizer.callerKey(caller);
    },

    visible(ctx, items) {
      const caller = callerOf(ctx);
      const seen = new Array<boolean>(items.length).fill(false);
      if (caller === null) return seen;
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!;
        seen[i] = authorizer.listDecision(caller, LIST_ACTIONS[item.kind], item.name, annotationsOf(item)) === 'allow';
      }
      return seen;
    },

    admit(ctx, item, request) {
      const caller = callerOf(ctx);
      if (caller === null) return policyDenied(LIST_ACTIONS[item.kind]);
      switch (request.method) {
        case 'tools/call':
          return item.kind === 'tools' ? admitCall(caller, item, 'call_tool', request) : undefined;
        case 'prompts/get':
          return item.kind === 'prompts' ? admitCall(caller, item, 'get_prompt', request) : undefined;
        case 'resources/read':
        case 'resources/subscribe':
        case 'resources/unsubscribe':
        case 'completion/complete': {
          // ToolHive decides a read on the URI read (the gateway asked `visible` about it, a listed
          // resource or a template's expansion, so the decision is in the cache: this holds it
          // should the two ever differ), and a completion of a prompt as its get without
          // arguments (the list's decision).
          const uri = item.kind === 'resources' || item.kind === 'resourceTemplates' ? uriOf(item, request) : null;
          if (uri === null) return undefined;
          return authorizer.decide(caller, 'read_resource', uri) === 'allow' ? undefined : policyDenied('read_resource');
        }
        default:
          return undefined;
      }
    },
  };
}
