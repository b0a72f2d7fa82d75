/**
 * A response a hook or a route returns to short-circuit the request. Hooks never write to the
 * socket themselves; returning a Reply (or a GatewayError) is the only way to stop the chain.
 */
import type { JsonRpcId } from '../protocol/jsonrpc.ts';

export type ReplyBody = string | Buffer | null;

export class Reply {
  readonly status: number;
  readonly body: ReplyBody;
  readonly headers: Record<string, string>;

  constructor(status: number, body: ReplyBody, headers: Record<string, string> = {}) {
    this.status = status;
    this.body = body;
    this.headers = headers;
  }

  /** A JSON document (serialised once, here). */
  static json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
    return new Reply(status, JSON.stringify(value), { 'content-type': 'application/json', ...headers });
  }

  /** A JSON-RPC result for request `id`, answered by the gateway itself. */
  static rpcResult(id: JsonRpcId, result: unknown): Reply {
    return Reply.json(200, { jsonrpc: '2.0', id, result });
  }

  /**
   * A JSON-RPC error for request `id`. HTTP 200: the exchange succeeded at the transport level
   * and the MCP client reads the error from the body, as it would from a backend.
   */
  static rpcError(id: JsonRpcId, code: number, message: string, data?: unknown): Reply {
    const error = data === undefined ? { code, message } : { code, message, data };
    return Reply.json(200, { jsonrpc: '2.0', id, error });
  }

  static empty(status: number, headers: Record<string, string> = {}): Reply {
    return new Reply(status, null, headers);
  }
}
