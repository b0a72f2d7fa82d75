/**
 * Gatehouse's public API, the package's entry (`@gatehouse-mcp/gateway`): what a plugin, in this
 * repository (plugins/, examples/) or in a folder or package of its own, and an application that
 * embeds the gateway import. The built-in plugins use nothing else
 * (test/structure/imports.test.ts), so a user's plugin can do whatever they do.
 *
 * Nothing in core/ imports this file: each core module imports the ones it needs by path, so that
 * loading the entry cannot start an import cycle through it. Every name here is the core module's
 * own binding, so a plugin and the core share one instance of each class (one `GatewayError`).
 */

// ---- The plugin API: a plugin's definition, its hooks and routes, the host it is given ------

export { definePlugin } from './plugin-api/plugin.ts';
export type {
  Plugin,
  PluginDefinition,
  PluginHost,
  RequestHook,
  MessageHook,
  BackendHook,
  ResponseHook,
  MethodHook,
  RouteDef,
  HookResult,
  HttpMethod,
  MaybePromise,
} from './plugin-api/plugin.ts';
/** What one caller sees of the group: per-user tool policy (a plugin's `view`). */
export type { View, ViewItem } from './plugin-api/view.ts';
export type { ListKind } from './protocol/methods.ts';
/** A plugin given in code (definition, config, where it came from); the error of a refused plugin config; where a `module:` leads. */
export { PluginConfigError, resolvePluginModule, type PluginSpec } from './plugin-api/plugin-loader.ts';
/**
 * zod, the schema library of a plugin's `config` (and of every Gatehouse config): the gateway's
 * own copy, so a plugin needs no dependency but the gateway (plugins/README.md, Writing a plugin).
 */
export { z } from 'zod';

// ---- A request as hooks see it: the context, replies, outgoing headers, JSON-RPC ---------------

export { Context, Principal, defineSlot, type MessageTarget, type Slot } from './plugin-api/context.ts';
export { Reply } from './plugin-api/reply.ts';
export { OutgoingHeaders } from './plugin-api/outgoing-headers.ts';
export type { BackendInfo, ClaimRequirements, EndpointPolicy, ItemClaims } from './plugin-api/backend.ts';
/** The raw request a route handler and an `authenticate` hook read (`ctx.req`). */
export type { HttpRequest } from './http/types.ts';
export type {
  JsonRpcId,
  JsonRpcMessage,
  JsonRpcRequest,
  JsonRpcNotification,
  JsonRpcResponse,
  JsonRpcErrorObject,
} from './protocol/jsonrpc.ts';
export { isRequest, isNotification, isResponse } from './protocol/jsonrpc.ts';

// ---- Errors: what a hook answers with, and what a failed start throws -------------------------

export {
  GatewayError,
  StartupError,
  NotAvailableError,
  /** A plugin's own error codes, each with its HTTP status: `const error = errorCatalogue({quota_exceeded: 429})`. */
  errorCatalogue,
  /** A value a client or backend chose, made safe for a public error description (quoted, cut, ASCII). */
  untrusted,
  type CoreErrorCode,
  type AuthChallenge,
  type GatewayErrorOptions,
} from './base/errors.ts';

// ---- Config problems: file:line:col, the YAML path, did-you-mean --------------------------------

export {
  ConfigError,
  formatProblem,
  formatProblems,
  formatPath,
  sortProblems,
  describeValue,
  didYouMean,
  /** The zod error map that words problems for people ("is required", "unknown field ... (did you mean ...?)"). */
  schemaIssueMessage,
  /** The problems of one zod issue: its YAML path, message, and the key or value its position points at. */
  issueReports,
  /** A config file read and validated: the config, or a ConfigError with every problem / the problems as a Validation. */
  loadFile,
  validateFile,
  type ConfigProblem,
  type PathSegment,
  type Validation,
} from './config/problems.ts';
export { parseYamlDocuments, isMapping, type YamlDocument } from './config/yaml.ts';

// ---- Config helpers: the zod building blocks Gatehouse's own config files are made of ----------

export {
  /** Adds a problem at a path from a `superRefine`, pointing at its key or its value. */
  addIssue,
  /** Runs an object's `superRefine` as long as the value is a mapping, even when some fields are invalid. */
  whenMapping,
  httpUrlSchema,
  /** An issuer or token endpoint URL: https, or http on loopback; no credentials, query or fragment. */
  issuerUrl,
  parseUrl,
  /** A list whose items' `name`s are unique. */
  uniqueNames,
  /** A string as it appears in a message: JSON-quoted. */
  q as quoted,
  /** A non-empty string. */
  text as nonEmptyText,
  /** The context of a zod `superRefine` check. */
  type Ctx as RefinementCtx,
} from './config/formats.ts';
export { durationSchema } from './config/duration.ts';
/** The Secrets of a config file, and what a `*SecretRef` resolves to. */
export { SecretStore, secretBodyShape, type ResolvedSecretRef } from './config/secrets.ts';
export { serverSettingsSchema, MAX_WORKERS, type ServerSettings, type WorkersSetting } from './config/server-settings.ts';
/** Whether `server.workers` may mean more than one process (what must then be shared: workers-check.ts). */
export { auditFileProblem, severalWorkers } from './config/workers-check.ts';
/** Whether a group is aggregated (else served transparently): what a session of it lives on. */
export { needsAggregation } from './config/aggregation-config.ts';
/** The `telemetry` section (ToolHive's vMCP fields), and the settings `App.telemetry` takes. */
export { telemetrySchema, toTelemetrySettings, type TelemetryInput } from './config/telemetry-schema.ts';
export type { TelemetrySettings } from './observe/telemetry/telemetry-settings.ts';
export { parseSigningKey, type SigningAlg } from './config/signing-key.ts';

// ---- The vMCP configuration, resolved: what the built-in auth plugins are configured by --------

export { validateVmcpFile, type VmcpValidateOptions } from './config/vmcp-config.ts';
/** What Cedar's checks of `authzConfig`'s policies are given and answer (the cedar-authz plugin implements them). */
export type { AuthzPolicyChecks, AuthzPolicySet, AuthzTextProblem } from './config/authz-policy.ts';
export type {
  VmcpConfig,
  AuthzPolicyConfig,
  IncomingAuthConfig,
  InlineOidcConfig,
  ClusterOidcConfig,
  AuthServerConfig,
  UpstreamProviderConfig,
  TokenResponseMapping,
  TokenExchangeConfig,
  TokenExchangeCacheConfig,
  RegistryFeedConfig,
} from './config/vmcp-types.ts';
export { AUTH_SERVER_ENDPOINT_NAMES, type AuthServerEndpointGroup } from './config/auth-server-limits.ts';

// ---- HTTP helpers: bodies, CORS of public documents, per-client budgets ------------------------

export { readBody, startReading, type BodySink } from './http/body.ts';
/** The CORS headers of a public document any origin may read (metadata and discovery documents). */
export { PUBLIC_DOCUMENT_HEADERS } from './http/cors.ts';
/** The key of a client address for a per-client limit (an IPv6 address by its /64). */
export { limitKey } from './http/client-address.ts';
/**
 * What an outbound connection whose destination someone else chose may reach (SSRF): the class of
 * an address, the policy of the plugins' outbound fetches, and a socket `lookup` that enforces one
 * on the addresses a name resolves to, at every connect.
 */
export { addressClass, type AddressClass } from './http/address-class.ts';
export {
  filteredLookup,
  guardedLookup,
  isLoopbackAddress,
  isLoopbackHost,
  isPrivateAddress,
  refusedAddress,
  type AddressPolicy,
  type LookupFunction,
} from './http/address-guard.ts';
/** A token budget per key and a shared one, in memory or Redis (rate limits of a plugin's routes). */
export { RequestBudget, type BudgetRefusal, type BudgetStore } from './base/rate-limit.ts';
/**
 * `next(value)` at once when `value` is not a promise, else once it resolves: a step that stays
 * synchronous while what it waits for is. (Not exported as `then`: that would make this module a
 * thenable.)
 */
export { then as mapMaybePromise } from './base/thenable.ts';

// ---- Observe: logs and metrics --------------------------------------------------------------------

export { createLogger, defaultLogFormat, LOG_LEVELS, LOG_FORMATS, type Logger, type LogFormat } from './observe/log.ts';
/** Counters and histograms that cost a number's increment per observation (prom-client renders them at scrape). */
export { CounterFamily, HistogramFamily, type CounterChild, type HistogramChild } from './observe/fast-metrics.ts';
export { GatewayMetrics, type BackendMetrics } from './observe/metrics.ts';
/**
 * The observation seam (core/observe/README.md): `diagnostics_channel.subscribe(CHANNELS.requestEnd, fn)`
 * gets each request's RequestRecord when its response is done; the upstream channels get each
 * backend exchange's UpstreamRecord, the outbound channels each of the plugins' calls to issuers
 * an OutboundRecord. `scopeRequests()` makes `currentRequest()` find the record of
 * the request whose work is running.
 */
export { CHANNELS, type ChannelName } from './observe/channels.ts';
export { RequestRecord, type ObservedPrincipal, type PhaseTiming, type RequestOutcome } from './observe/request-record.ts';
export { UpstreamRecord, type UpstreamOutcome } from './observe/upstream-record.ts';
export { OutboundRecord } from './observe/outbound-record.ts';
export { currentRequest, runInRequest, scopeRequests } from './observe/request-scope.ts';
/**
 * What a plugin publishes for the audit trail (`gatehouse:auth:event`, `gatehouse:registry:change`):
 * an operation that is no request of its own, with `PluginHost.origin`; `observedPrincipal` is the
 * caller as a request's record names it.
 */
export { publishAuthEvent, publishRegistryChange, type AuditOutcome, type OperationEvent } from './observe/operation-event.ts';
export { observedPrincipal } from './server/request-observation.ts';
/** The `audit` section (ToolHive's fields), and the settings `App.observe` takes. */
export { auditSchema, toAuditSettings, type AuditInput } from './config/audit-schema.ts';
export { AUDIT_OFF, type AuditSettings } from './observe/audit/audit-settings.ts';

// ---- Redis, as the gateway connects to it (one address or Sentinel) -------------------------------

export { createRedisClient, waitReady } from './store/redis.ts';

// ---- The upstream client: for a plugin that forwards requests to a server of its own ------------

/** A server to forward to, described as the gateway describes a backend. */
export { backendInfo } from './plugin-api/backend.ts';
/** The keep-alive connection pool of one upstream origin. */
export { Pool } from './upstream/pool.ts';
/** One request through a Pool and its response relayed to the client (subclassed per use). */
export { Exchange, writeToClient } from './upstream/exchange.ts';

// ---- Servers: the vMCP server (to embed, as the CLI does), and an application of one's own -------

export { startVmcp, type StartVmcpOptions, type RunningVmcp } from './vmcp/virtual-mcp-server.ts';
/** Where a registry-fed group reads its registry (`startVmcp`'s `registrySource`: a registry in the same process). */
export type { RegistrySource } from './vmcp/registry-source.ts';
export type { RestartNeeded } from './vmcp/reload-diff.ts';
/** The plugin chain, router and lifecycle of a server; the registry server is one. */
export { App } from './server/app.ts';
/** The listener settings of a server's config (engine, limits, timeouts), for an App's GatewayServer. */
export { listenerOptions, type GatewayServer } from './server/gateway-server.ts';
