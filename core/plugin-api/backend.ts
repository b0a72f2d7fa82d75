/**
 * A backend MCP server as the core sees it: resolved once from its `MCPServer` resource at start.
 */
import { NO_PASSTHROUGH, type PassthroughHeaders } from '../http/passthrough-headers.ts';

/** `{name, key}` of a `Secret`, plus the resolved value. */
export interface ResolvedSecretRef {
  readonly name: string;
  readonly key: string;
  readonly value: string;
}

/**
 * The outgoing-auth strategy of a backend (an MCPExternalAuthConfig). `name` is its
 * `metadata.name`. A backend without one (null) is contacted with no credentials, as is one with
 * `unauthenticated`, which says so explicitly.
 */
export type ExternalAuthConfig =
  | {
      readonly name: string;
      readonly type: 'upstreamInject';
      readonly providerName: string;
    }
  | TokenExchangeConfig
  | {
      readonly name: string;
      readonly type: 'headerInjection';
      /** Lower case. */
      readonly headerName: string;
      readonly value: ResolvedSecretRef;
    }
  | {
      readonly name: string;
      readonly type: 'bearerToken';
      readonly token: ResolvedSecretRef;
    }
  | {
      readonly name: string;
      readonly type: 'unauthenticated';
    };

export interface TokenExchangeConfig {
  readonly name: string;
  readonly type: 'tokenExchange';
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: ResolvedSecretRef | null;
  readonly audience: string;
  readonly scopes: readonly string[];
  /** The embedded server's upstream provider whose token is the subject; null: the caller's own token. */
  readonly subjectProviderName: string | null;
  /** As an RFC 8693 URN, e.g. `urn:ietf:params:oauth:token-type:access_token`. */
  readonly subjectTokenType: string;
  /** Lower case; null: the exchanged token goes in `Authorization: Bearer`. */
  readonly externalTokenHeaderName: string | null;
  /** Time allowed for one exchange. */
  readonly timeoutMs: number;
}

/** Claim name → the one string a caller's token must hold under that name (a flat claim map). */
export type ClaimRequirements = Readonly<Record<string, string>>;

/**
 * `spec.config.aggregation.tools[].authzClaims` of a backend (Gatehouse extension): who may see
 * and use each of its items, for a claims filter to read. Each map is by the backend's own name
 * (a resource by its URI); an item not named has no claims of its own.
 */
export interface ItemClaims {
  readonly tools: Readonly<Record<string, ClaimRequirements>>;
  readonly prompts: Readonly<Record<string, ClaimRequirements>>;
  readonly resources: Readonly<Record<string, ClaimRequirements>>;
}

export const NO_ITEM_CLAIMS: ItemClaims = Object.freeze({ tools: Object.freeze({}), prompts: Object.freeze({}), resources: Object.freeze({}) });

/**
 * Which addresses the gateway may connect to for a backend whose URL someone else chose (a
 * registry's server, whose publisher wrote it): public ones, and those the operator allowed.
 * Checked on every address dialled, after the name is resolved (upstream/endpoint-guard.ts).
 */
export interface EndpointPolicy {
  /** Where the operator sets it, for messages: `MCPGroup/<name> spec.registry`. */
  readonly where: string;
  /** `allowPrivateEndpoint` (ToolHive's name): private addresses too (RFC 1918, 100.64.0.0/10, fc00::/7). */
  readonly allowPrivate: boolean;
  /** `allowedEndpointCIDRs` (Gatehouse extension): ranges allowed whatever their class, as written. */
  readonly allowedCidrs: readonly string[];
}

/**
 * How a backend is reached (`MCPServer.spec.transport`): streamable HTTP at its URL, a command
 * the gateway runs (stdio), or a legacy HTTP+SSE server of MCP 2024-11-05 at its URL.
 */
export type BackendTransportConfig = StreamableHttpTransportConfig | StdioTransportConfig | SseTransportConfig;

export interface StreamableHttpTransportConfig {
  readonly kind: 'streamable-http';
}

export interface SseTransportConfig {
  readonly kind: 'sse';
}

/** A stdio backend: the command the operator configured, and how its processes are kept. */
export interface StdioTransportConfig {
  readonly kind: 'stdio';
  /** `spec.command`: the program, found on PATH when it has no slash. */
  readonly command: string;
  readonly args: readonly string[];
  /** `spec.env`, secret references resolved: the whole environment of the child with PATH and HOME. */
  readonly env: Readonly<Record<string, string>>;
  /** `spec.cwd` (absolute), or null: the gateway's working directory. */
  readonly cwd: string | null;
  /** `spec.stdio.shared`: one process for every session (a server that keeps no per-session state). */
  readonly shared: boolean;
  /** `spec.stdio.maxProcesses`: processes of this backend at most (one per session unless shared). */
  readonly maxProcesses: number;
  /** `spec.stdio.idleTimeout`: a process no request used for this long is ended (it starts again on the next one). */
  readonly idleTimeoutMs: number;
  /** `spec.stdio.startupTimeout`: time from start to the answer of its initialize. */
  readonly startupTimeoutMs: number;
  /** `spec.stdio.stopGracePeriod`: time between SIGTERM and SIGKILL when a process is ended. */
  readonly stopGraceMs: number;
}

export const STREAMABLE_HTTP: StreamableHttpTransportConfig = Object.freeze({ kind: 'streamable-http' });

export interface BackendInfo {
  /** `metadata.name` of the MCPServer. */
  readonly name: string;
  readonly url: URL;
  /** How it is reached; with stdio, `url` is `stdio://<name>` and names it only. */
  readonly transport: BackendTransportConfig;
  /** `scheme://host:port` the connection pool dials. */
  readonly origin: string;
  /** Path and query sent on the request line. */
  readonly path: string;
  /** What the backend receives as `Host`: its own authority, never the client's. */
  readonly authority: string;
  /** Time allowed for the backend's response headers. */
  readonly timeoutMs: number;
  /** Time allowed for the whole answer of a call the gateway makes for itself (initialize, lists, discovery, fan-out). */
  readonly answerTimeoutMs: number;
  /** The most one answer of the backend may hold (a JSON body, or the events of a request's stream), and one event of any stream. */
  readonly maxResponseBytes: number;
  /** Outgoing credentials strategy, or null when the backend is contacted without authentication. */
  readonly auth: ExternalAuthConfig | null;
  /** `spec.passthroughHeaders` of the VirtualMCPServer: client headers this backend gets besides the usual ones. */
  readonly passthroughHeaders: PassthroughHeaders;
  /**
   * `metadata.annotations` of the MCPServer, as written (none: empty): what an operator says of the
   * backend for plugins to read, such as ToolHive's `toolhive.stacklok.dev/authz-claims`.
   */
  readonly annotations: Readonly<Record<string, string>>;
  /** The claims of its tools, prompts and resources in the aggregation config (none: empty maps). */
  readonly authzClaims: ItemClaims;
  /** The addresses it may be reached at (a registry's server); null: any (an MCPServer of the operator's file). */
  readonly endpointPolicy: EndpointPolicy | null;
}

/** `operational.maxBackendResponseSize` by default: as large as a JSON answer was ever read (32 MiB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** What bounds a backend's answers (BackendConfig's fields); unset, the answer has `timeoutMs` and 32 MiB. */
export interface AnswerBounds {
  readonly answerTimeoutMs?: number;
  readonly maxResponseBytes?: number;
}

export function backendInfo(
  name: string,
  url: string,
  timeoutMs: number,
  auth: ExternalAuthConfig | null = null,
  bounds: AnswerBounds = {},
  passthroughHeaders: PassthroughHeaders = NO_PASSTHROUGH,
  annotations: Readonly<Record<string, string>> = NO_ANNOTATIONS,
  authzClaims: ItemClaims = NO_ITEM_CLAIMS,
  endpointPolicy: EndpointPolicy | null = null,
  transport: BackendTransportConfig = STREAMABLE_HTTP,
): BackendInfo {
  const parsed = new URL(url);
  return {
    name,
    url: parsed,
    transport,
    // A stdio backend's URL (stdio://<name>) has no origin of its own: it is only a key.
    origin: parsed.origin === 'null' ? `${parsed.protocol}//${parsed.host}` : parsed.origin,
    path: parsed.pathname + parsed.search,
    authority: parsed.host,
    timeoutMs,
    answerTimeoutMs: bounds.answerTimeoutMs ?? timeoutMs,
    maxResponseBytes: bounds.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    auth,
    passthroughHeaders,
    annotations,
    authzClaims,
    endpointPolicy,
  };
}

const NO_ANNOTATIONS: Readonly<Record<string, string>> = Object.freeze({});
