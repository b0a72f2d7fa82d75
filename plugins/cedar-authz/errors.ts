/**
 * The answer to a call the policies deny, of an item the caller sees (its arguments decided it).
 *
 * ToolHive answers HTTP 403 with a JSON-RPC error of code 403 (`mcp.JSONRPCCodeDenied`, outside
 * JSON-RPC's reserved range) and a message that names the kind of call only (`call denied by
 * authorization policy`), never the item. Gatehouse keeps the code and the messages, so a client
 * written for ToolHive reads the same error, but answers it with HTTP 200: inside an MCP exchange
 * the gateway is the MCP server, and a refused call is that call's JSON-RPC error, not a failure
 * of the transport (the SDK clients surface a JSON-RPC error to the caller as the call's error
 * and the session goes on, where an HTTP 403 on a POST is a transport failure, and for some
 * clients a cue to ask for other scopes). Gatehouse answers a failed backend of an aggregated
 * group the same way.
 */
import { GatewayError } from '@gatehouse-mcp/gateway';
import type { CedarAction } from './request.ts';

/** ToolHive's JSON-RPC code of a policy denial. */
export const DENIED_RPC_CODE = 403;

/** ToolHive's messages (pkg/vmcp/errors.go), by action. */
const MESSAGES: Readonly<Record<CedarAction, string>> = {
  call_tool: 'call denied by authorization policy',
  get_prompt: 'prompt denied by authorization policy',
  read_resource: 'read denied by authorization policy',
};

/** The error of a denied call: `forbidden`, JSON-RPC code 403 inside an HTTP 200. */
export function policyDenied(action: CedarAction): GatewayError {
  return new GatewayError('forbidden', MESSAGES[action], { status: 200, rpcCode: DENIED_RPC_CODE });
}
