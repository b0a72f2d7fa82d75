/**
 * The backend of the load benchmark: a minimal node:http MCP server in JSON-response mode
 * (streamable HTTP, stateless: no session of its own, any `Mcp-Session-Id` accepted; `initialize`
 * answers with `Mcp-Session-Id: bench-session`, the id the benchmarked requests carry, so that a
 * gateway with incoming auth binds it to the benchmark's principal).
 *
 * `POST /mcp` with a JSON-RPC request answers one JSON-RPC response (`content-type:
 * application/json`, content-length set, keep-alive). `tools/call` — the benchmarked call —
 * echoes `arguments.text` in a ~150-byte result. `initialize`, `tools/list` and `ping` are
 * answered too so that a gateway that probes or discovers its backend works; notifications get
 * 202. Anything else on /mcp is 405, other paths 404.
 *
 * As a child process: `node --import tsx bench/load/backend.ts [port]` binds 127.0.0.1 (port 0
 * by default) and prints `LISTENING <port>`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { spawnNodeScript, type ManagedChild } from './process.ts';

const PROTOCOL_VERSION = '2025-06-18';
const ECHO_TOOL = {
  name: 'echo',
  description: 'Echoes its text argument',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

interface Rpc {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; arguments?: { text?: unknown } };
}

function result(method: string, msg: Rpc): unknown {
  switch (method) {
    case 'tools/call': {
      const text = typeof msg.params?.arguments?.text === 'string' ? msg.params.arguments.text : '';
      return {
        content: [{ type: 'text', text: `echo: ${text}` }],
        structuredContent: { text, length: text.length },
        isError: false,
      };
    }
    case 'initialize':
      return {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'gatehouse-bench-backend', version: '1.0.0' },
      };
    case 'tools/list':
      return { tools: [ECHO_TOOL] };
    case 'ping':
      return {};
    default:
      return undefined;
  }
}

/** The session id `initialize` gives out (wrk.ts CALL_HEADERS). */
export const BENCH_SESSION = 'bench-session';

function send(res: ServerResponse, status: number, body: string, session = false): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(session ? { 'mcp-session-id': BENCH_SESSION } : {}),
  });
  res.end(body);
}

function answer(res: ServerResponse, raw: string): void {
  let msg: Rpc;
  try {
    msg = JSON.parse(raw) as Rpc;
  } catch {
    send(res, 400, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    return;
  }
  if (typeof msg !== 'object' || msg === null || typeof msg.method !== 'string') {
    // A JSON-RPC response or something else: accepted, nothing to say.
    res.writeHead(202, { 'content-length': 0 });
    res.end();
    return;
  }
  if (msg.id === undefined) {
    res.writeHead(202, { 'content-length': 0 }); // notification
    res.end();
    return;
  }
  const value = result(msg.method, msg);
  const body =
    value === undefined
      ? JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } })
      : JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: value });
  send(res, 200, body, msg.method === 'initialize');
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url === undefined ? '' : req.url.split('?', 1)[0];
  if (path !== '/mcp') {
    send(res, 404, '{"error":"not_found"}');
    req.resume();
    return;
  }
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    send(res, 405, '{"error":"method_not_allowed"}');
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    answer(res, chunks.length === 1 && chunks[0] !== undefined ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
  });
}

/** Creates the backend server (not listening yet). */
export function createBackend(): Server {
  const server = createServer(handle);
  // Longer than any proxy's upstream idle time, so pooled connections are never closed under them.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  return server;
}

/** Starts the backend as a child process; resolves once it listens. `profile`: its CPU profile's label with BENCH_PROFILE_DIR. */
export async function startBackendProcess(profile?: string): Promise<{ child: ManagedChild; port: number; url: string }> {
  const child = spawnNodeScript('backend', new URL(import.meta.url).pathname, [], profile === undefined ? {} : { profile });
  const m = await child.waitForLine(/^LISTENING (\d+)$/, 15_000);
  const port = Number(m[1]);
  return { child, port, url: `http://127.0.0.1:${port}/mcp` };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const server = createBackend();
  server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
    const addr = server.address();
    process.stdout.write(`LISTENING ${typeof addr === 'object' && addr !== null ? addr.port : 0}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}
