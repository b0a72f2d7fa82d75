/**
 * The echo MCP backend of `gatehouse bench`: a small node:http server that stands in for every
 * MCPServer of the configuration, so that the bench measures the gateway and not a real backend.
 *
 * Streamable HTTP, JSON-response mode, a 2025-11-25 server that keeps no state: `initialize`
 * hands out a random `Mcp-Session-Id`, any session id is accepted afterwards, `tools/list` lists
 * the tools named on its command line (default `echo`), `tools/call` of any name answers at once
 * with the call's arguments echoed (~150 bytes), `ping` answers `{}`, notifications and
 * responses get 202, DELETE 200, GET 405 (no standalone stream). `server/discover` is refused as
 * a 2025 server refuses a request without a session, so the gateway treats it as a 2025 backend.
 * Every path is served: the bench gives each MCPServer its own, `/mcp/<name>`, for the logs.
 *
 *   node --import tsx plugins/cli/bench/echo-backend.ts [tool,...]   → prints `LISTENING <port>`
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { Buffer } from 'node:buffer';
import process from 'node:process';

interface Rpc {
  id?: unknown;
  method?: unknown;
  params?: { protocolVersion?: unknown; name?: unknown; arguments?: unknown };
}

const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];

function reply(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function answer(res: ServerResponse, raw: string, toolList: string): void {
  let msg: Rpc;
  try {
    msg = JSON.parse(raw) as Rpc;
  } catch {
    reply(res, 400, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    return;
  }
  if (typeof msg !== 'object' || msg === null || typeof msg.method !== 'string' || msg.id === undefined) {
    res.writeHead(202, { 'content-length': 0 }).end(); // a notification or a response
    return;
  }
  const id = JSON.stringify(msg.id);
  let result: string;
  const headers: Record<string, string> = {};
  switch (msg.method) {
    case 'initialize': {
      const asked = typeof msg.params?.protocolVersion === 'string' ? msg.params.protocolVersion : '';
      headers['mcp-session-id'] = randomUUID();
      result = JSON.stringify({
        protocolVersion: LEGACY_VERSIONS.includes(asked) ? asked : LEGACY_VERSIONS[0],
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'gatehouse-bench-echo', version: '1.0.0' },
      });
      break;
    }
    case 'server/discover':
      reply(res, 400, `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":"Bad Request: Mcp-Session-Id header is required"}}`);
      return;
    case 'tools/list':
      result = toolList;
      break;
    case 'tools/call': {
      const name = typeof msg.params?.name === 'string' ? msg.params.name : '';
      const args = JSON.stringify(msg.params?.arguments ?? {});
      result = `{"content":[{"type":"text","text":${JSON.stringify(`${name}: ${args}`)}}],"isError":false}`;
      break;
    }
    case 'ping':
      result = '{}';
      break;
    default:
      reply(res, 200, `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"Method not found"}}`);
      return;
  }
  reply(res, 200, `{"jsonrpc":"2.0","id":${id},"result":${result}}`, headers);
}

/** The echo backend (not listening yet), listing `tools`. */
export function createEchoBackend(tools: readonly string[] = ['echo']): Server {
  const toolList = JSON.stringify({
    tools: tools.map((name) => ({
      name,
      description: 'Echoes its arguments (gatehouse bench)',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    })),
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'DELETE') {
      req.resume();
      res.writeHead(200, { 'content-length': 0 }).end();
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { allow: 'POST, DELETE', 'content-length': 0 }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(res, Buffer.concat(chunks).toString('utf8'), toolList));
  });
  // Longer than the gateway's pooled connections stay idle, so none is closed under it.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 121_000;
  return server;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const tools = (process.argv[2] ?? 'echo').split(',').filter((t) => t !== '');
  const server = createEchoBackend(tools);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`LISTENING ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
  });
  process.on('SIGTERM', () => process.exit(0));
}
