/**
 * The MCP requests `gatehouse bench` sends, in the two forms a client may use:
 *
 * - `2025-11-25`: `initialize` (and `notifications/initialized`) opens a session; every
 *   `tools/call` then carries its `Mcp-Session-Id` and `MCP-Protocol-Version`.
 * - `2026-07-28`: stateless; every request carries the protocol version, the client's
 *   capabilities and identity in `params._meta`, and the `Mcp-Method` / `Mcp-Name` headers.
 *
 * The set-up requests (the session, the tool list, one checked call) go through fetch; the
 * load generator then replays the same `tools/call` with the same headers.
 */
import { VERSION } from '../version.ts';

export const PROTOCOLS = ['2025-11-25', '2026-07-28'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

const CLIENT_INFO = { name: 'gatehouse-bench', version: VERSION };
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
};

/** One request of the benchmark: where, with which headers and body. */
export interface BenchRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A set-up step that failed: what the server answered. */
export class ClientError extends Error {}

interface RpcAnswer {
  status: number;
  headers: Headers;
  message: { result?: unknown; error?: { code?: unknown; message?: unknown } } | null;
  text: string;
}

/** The JSON-RPC response in a JSON or SSE body (the first `data:` that parses and has an id). */
function responseOf(text: string, contentType: string | null): RpcAnswer['message'] {
  const candidates = contentType?.startsWith('text/event-stream') ? text.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()) : [text];
  for (const candidate of candidates) {
    try {
      const parsed = JSON.parse(candidate) as unknown;
      if (typeof parsed === 'object' && parsed !== null && ('result' in parsed || 'error' in parsed)) return parsed as RpcAnswer['message'];
    } catch {
      /* not this one */
    }
  }
  return null;
}

async function post(url: string, headers: Readonly<Record<string, string>>, body: unknown): Promise<RpcAnswer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw new ClientError(`POST ${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
  const text = await res.text();
  return { status: res.status, headers: res.headers, message: responseOf(text, res.headers.get('content-type')), text };
}

function describe(answer: RpcAnswer): string {
  if (answer.message?.error !== undefined) return `JSON-RPC error ${String(answer.message.error.code)}: ${String(answer.message.error.message)}`;
  const challenge = answer.headers.get('www-authenticate');
  return `HTTP ${answer.status}${challenge === null ? '' : ` (WWW-Authenticate: ${challenge})`}: ${answer.text.slice(0, 300)}`;
}

async function rpc(url: string, headers: Readonly<Record<string, string>>, body: unknown, what: string): Promise<RpcAnswer> {
  const answer = await post(url, headers, body);
  if (answer.status !== 200 || answer.message === null || answer.message.error !== undefined) throw new ClientError(`${what} at ${url}: ${describe(answer)}`);
  return answer;
}

/**
 * The headers every request of a client of `protocol` carries at `url` (for 2025-11-25, after
 * opening its session there); `auth` holds the Authorization header, if any.
 */
export async function clientHeaders(url: string, protocol: Protocol, auth: Readonly<Record<string, string>>): Promise<Record<string, string>> {
  const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth };
  if (protocol === '2026-07-28') return { ...base, 'mcp-protocol-version': protocol };
  const init = await rpc(url, base, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: protocol, capabilities: {}, clientInfo: CLIENT_INFO } }, 'initialize');
  const session = init.headers.get('mcp-session-id');
  const agreed = (init.message?.result as { protocolVersion?: unknown } | undefined)?.protocolVersion;
  const headers: Record<string, string> = { ...base, 'mcp-protocol-version': typeof agreed === 'string' ? agreed : protocol };
  if (session !== null) headers['mcp-session-id'] = session;
  const initialized = await post(url, headers, { jsonrpc: '2.0', method: 'notifications/initialized' });
  if (initialized.status >= 300) throw new ClientError(`notifications/initialized at ${url}: HTTP ${initialized.status}: ${initialized.text.slice(0, 300)}`);
  return headers;
}

function request(protocol: Protocol, headers: Readonly<Record<string, string>>, method: string, params: Record<string, unknown>, name?: string): { headers: Record<string, string>; body: string } {
  if (protocol === '2025-11-25') return { headers: { ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) };
  const modernHeaders: Record<string, string> = { ...headers, 'mcp-method': method };
  if (name !== undefined) modernHeaders['mcp-name'] = name;
  return { headers: modernHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: MODERN_META } }) };
}

/** The names of the tools listed at `url` (its first page). */
export async function listTools(url: string, protocol: Protocol, headers: Readonly<Record<string, string>>): Promise<string[]> {
  const r = request(protocol, headers, 'tools/list', {});
  const answer = await rpc(url, r.headers, r.body, 'tools/list');
  const tools = (answer.message?.result as { tools?: { name?: unknown }[] } | undefined)?.tools ?? [];
  return tools.map((t) => t.name).filter((n): n is string => typeof n === 'string');
}

/** The benchmarked `tools/call`, checked once: it must be a 200 with a JSON-RPC result. */
export async function toolCall(url: string, protocol: Protocol, headers: Readonly<Record<string, string>>, tool: string, args: unknown): Promise<BenchRequest> {
  const r = request(protocol, headers, 'tools/call', { name: tool, arguments: args }, tool);
  await rpc(url, r.headers, r.body, `tools/call ${tool}`);
  return { url, headers: r.headers, body: r.body };
}

/** A request replayed elsewhere (through a reference proxy), checked once as `toolCall` checks the gateway's. */
export async function checkRequest(req: BenchRequest, what: string): Promise<void> {
  await rpc(req.url, req.headers, req.body, what);
}
