/**
 * A request's span name and attributes from its record, after the OpenTelemetry semantic
 * conventions for MCP (`mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`,
 * `mcp.resource.uri`, `gen_ai.tool.name`, `gen_ai.prompt.name`, `gen_ai.operation.name`,
 * `jsonrpc.request.id`), JSON-RPC (`rpc.response.status_code`, `error.type`) and HTTP
 * (`http.request.method`, `http.route`, `url.path`, `http.response.status_code`,
 * `client.address`). `mcp.server.name` names the backend, as ToolHive's vMCP does.
 *
 * `mcp.session.id` carries the session's digest, not its id: with the owner's token the id is
 * the session's credential, and a trace store is not where credentials go.
 */
import type { Attributes } from '@opentelemetry/api';
import type { RequestRecord } from '../request-record.ts';
import type { UpstreamRecord } from '../upstream-record.ts';

/** Span names are the client's words in part (a method, a tool's name): cut to this. Attribute values are cut by the SDK (start-telemetry.ts). */
const MAX_NAME = 200;

/** `{mcp.method.name} {target}` for a tool or prompt (never a resource URI: unbounded), else `{method} {route}`. */
export function requestSpanName(record: RequestRecord): string {
  let name: string;
  if (record.rpcMethod !== null) {
    name = record.subjectName !== null && record.subjectKind !== 'resource' ? record.rpcMethod + ' ' + record.subjectName : record.rpcMethod;
  } else name = record.route === '' ? record.method : record.method + ' ' + record.route;
  return name.length > MAX_NAME ? name.slice(0, MAX_NAME) : name;
}

function mcpAttributes(record: RequestRecord, attributes: Attributes): void {
  attributes['mcp.method.name'] = record.rpcMethod!;
  attributes['rpc.system.name'] = 'jsonrpc';
  attributes['jsonrpc.protocol.version'] = '2.0';
  if (record.rpcId !== null) attributes['jsonrpc.request.id'] = String(record.rpcId);
  if (record.sessionTag !== null) attributes['mcp.session.id'] = record.sessionTag;
  if (record.protocolVersion !== null) attributes['mcp.protocol.version'] = record.protocolVersion;
  if (record.backend !== null) attributes['mcp.server.name'] = record.backend;
  if (record.subjectName !== null) {
    if (record.subjectKind === 'tool') {
      attributes['gen_ai.tool.name'] = record.subjectName;
      attributes['gen_ai.operation.name'] = 'execute_tool';
    } else if (record.subjectKind === 'prompt') attributes['gen_ai.prompt.name'] = record.subjectName;
    else attributes['mcp.resource.uri'] = record.subjectName;
  }
  if (record.rpcErrorCode !== null) attributes['rpc.response.status_code'] = String(record.rpcErrorCode);
}

/** The attributes of a request's span once it ended. */
export function requestAttributes(record: RequestRecord): Attributes {
  const attributes: Attributes = {
    'http.request.method': record.method,
    'url.path': record.path,
    'http.response.status_code': record.status,
    'client.address': record.clientAddress,
    'gatehouse.request.id': record.requestId,
  };
  if (record.route !== '') attributes['http.route'] = record.route;
  // A batch is several MCP requests in one HTTP request: no one method names it.
  if (record.rpcMethod === 'batch') attributes['gatehouse.jsonrpc.batch'] = true;
  else if (record.rpcMethod !== null) mcpAttributes(record, attributes);
  if (record.errorCode !== null) attributes['error.type'] = record.errorCode;
  else if (record.outcome === 'aborted') attributes['error.type'] = 'client_closed';
  else if (record.status >= 500) attributes['error.type'] = String(record.status);
  return attributes;
}

/** The attributes of a backend call's span at its start. */
export function upstreamAttributes(record: UpstreamRecord, rpcMethod: string | null): Attributes {
  const attributes: Attributes = {
    'http.request.method': record.method,
    'url.path': record.path,
    'mcp.server.name': record.backend,
    'gatehouse.backend.transport': record.transport,
  };
  if (rpcMethod !== null) attributes['mcp.method.name'] = rpcMethod;
  const version = record.header('mcp-protocol-version');
  if (version !== undefined) attributes['mcp.protocol.version'] = version;
  return attributes;
}
