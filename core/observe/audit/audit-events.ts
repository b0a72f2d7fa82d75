/**
 * The audit trail's event types. The MCP ones are ToolHive's names (its audit middleware's
 * `mcp_*`, `sse_connection`, `http_request`), so an `eventTypes` list written for ToolHive works
 * here; the authorization server's and the registry's are Gatehouse's own (ToolHive audits
 * neither), in the same form.
 */

/** An MCP method's event type, as ToolHive maps it; a method it does not name is `mcp_request`. */
const MCP_EVENT_TYPES: Readonly<Record<string, string>> = {
  initialize: 'mcp_initialize',
  'tools/call': 'mcp_tool_call',
  'tools/list': 'mcp_tools_list',
  'resources/read': 'mcp_resource_read',
  'resources/list': 'mcp_resources_list',
  'prompts/get': 'mcp_prompt_get',
  'prompts/list': 'mcp_prompts_list',
  'notifications/message': 'mcp_notification',
  ping: 'mcp_ping',
  'logging/setLevel': 'mcp_logging',
  'completion/complete': 'mcp_completion',
  'notifications/roots/list_changed': 'mcp_roots_list_changed',
};

/** The embedded authorization server's operations (published on `gatehouse:auth:event`). */
export const AUTH_EVENT_TYPES = [
  /** A sign-in at one upstream identity provider of the login chain (its `provider`). */
  'auth_login',
  /** The user's answer on the consent page (allowed: success; declined: denied). */
  'auth_consent',
  /** A dynamic client registration (RFC 7591). */
  'auth_client_registration',
  /** A token request other than a refresh (an authorization code exchanged, ...). */
  'auth_token',
  /** A refresh token exchanged. */
  'auth_token_refresh',
] as const;

/** The registry server's changes (published on `gatehouse:registry:change`). */
export const REGISTRY_EVENT_TYPES = [
  'registry_publish',
  'registry_delete',
  /** A source or registry put, deleted or synced through the admin API. */
  'registry_admin_change',
] as const;

export type AuthEventType = (typeof AUTH_EVENT_TYPES)[number];
export type RegistryEventType = (typeof REGISTRY_EVENT_TYPES)[number];

/** Every event type `eventTypes` and `excludeEventTypes` may name. */
export const AUDIT_EVENT_TYPES: readonly string[] = [
  ...new Set(Object.values(MCP_EVENT_TYPES)),
  'mcp_request',
  'sse_connection',
  'http_request',
  ...AUTH_EVENT_TYPES,
  ...REGISTRY_EVENT_TYPES,
];

/** The event type of a request to the MCP endpoint: by its JSON-RPC method, else by its HTTP method. */
export function mcpEventType(rpcMethod: string | null, httpMethod: string): string {
  if (rpcMethod !== null) return MCP_EVENT_TYPES[rpcMethod] ?? 'mcp_request';
  return httpMethod === 'GET' ? 'sse_connection' : 'mcp_request';
}
