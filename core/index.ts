/**
 * Gatehouse's public API: what a plugin author or an embedding application imports as
 * `gatehouse`.
 */
export { definePlugin } from './plugin.ts';
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
} from './plugin.ts';
export { Reply } from './reply.ts';
export { GatewayError, type CoreErrorCode, type AuthChallenge } from './errors.ts';
export { Context, Principal, defineSlot, type MessageTarget, type Slot } from './context.ts';
export { OutgoingHeaders } from './outgoing-headers.ts';
export type { BackendInfo } from './backend.ts';
export type {
  JsonRpcId,
  JsonRpcMessage,
  JsonRpcRequest,
  JsonRpcNotification,
  JsonRpcResponse,
  JsonRpcErrorObject,
} from './mcp/jsonrpc.ts';
export { isRequest, isNotification, isResponse } from './mcp/jsonrpc.ts';
export { startVmcp, type StartVmcpOptions, type RunningVmcp } from './virtual-mcp-server.ts';
export type { PluginSpec } from './plugin-loader.ts';
export type { VmcpConfig } from './config/vmcp-types.ts';
