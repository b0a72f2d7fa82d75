/**
 * A light, stateless MCP server for the aggregation benchmarks (streamable HTTP, JSON response
 * mode): `initialize` hands out a random session id, `tools/list` lists `--tools` tools in one
 * page, `tools/call` answers at once, notifications get 202, DELETE 200, GET 405 (no standalone
 * stream). It keeps no per-session state, so 50,000 backend sessions cost it nothing and the
 * gateway's own memory is what the session benchmark sees.
 *
 * `--era`: `legacy` (2025: initialize; server/discover refused as a 2025 server refuses a request
 * without a session) or `modern` (2026-07-28 only: server/discover, results with resultType and
 * cache hints, initialize refused with -32022).
 *
 *   node --import tsx bench/aggregate/backend.ts --count 5 --tools 50 [--era modern]   → prints `LISTENING <port> <port> ...`
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { parseArgs } from 'node:util';

export type BackendEra = 'legacy' | 'modern';

const MODERN_FIELDS = '"resultType":"complete","ttlMs":60000,"cacheScope":"public"';

function listResult(tools: number, backend: number): string {
  const list = Array.from({ length: tools }, (_, i) => ({
    name: `tool_${String(i).padStart(3, '0')}`,
    description: `Tool ${i} of backend ${backend}`,
    inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  }));
  return JSON.stringify({ tools: list });
}

export function createMcpBackend(index: number, tools: number, era: BackendEra = 'legacy'): Server {
  const modern = era === 'modern';
  const list = modern ? listResult(tools, index).replace(/}$/, `,${MODERN_FIELDS}}`) : listResult(tools, index);
  return createServer((req, res) => {
    if (req.method === 'DELETE') {
      res.writeHead(200).end();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown; method?: string; params?: { protocolVersion?: string; name?: string } };
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      let result: string;
      const headers: Record<string, string | number> = { 'content-type': 'application/json' };
      switch (message.method) {
        case 'server/discover':
          if (!modern) return void res.writeHead(400, headers).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Mcp-Session-Id header is required"}}');
          result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},${MODERN_FIELDS}}`;
          break;
        case 'initialize':
          if (modern) return void res.writeHead(400, headers).end(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`);
          headers['mcp-session-id'] = randomUUID();
          result = JSON.stringify({ protocolVersion: message.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: `backend-${index}`, version: '1' } });
          break;
        case 'tools/list':
          result = list;
          break;
        case 'tools/call':
          result = `{"content":[{"type":"text","text":"${message.params?.name ?? ''} ran"}],"isError":false${modern ? ',"resultType":"complete"' : ''}}`;
          break;
        default:
          result = '{}';
      }
      const body = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${result}}`;
      headers['content-length'] = Buffer.byteLength(body);
      res.writeHead(200, headers).end(body);
    });
  });
}

if (process.argv[1]?.endsWith('backend.ts')) {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '5' }, tools: { type: 'string', default: '50' }, era: { type: 'string', default: 'legacy' } } });
  const ports: number[] = [];
  for (let i = 0; i < Number(values.count); i++) {
    const server = createMcpBackend(i, Number(values.tools), values.era === 'modern' ? 'modern' : 'legacy');
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push((server.address() as { port: number }).port);
  }
  process.stdout.write(`LISTENING ${ports.join(' ')}\n`);
  process.on('SIGTERM', () => process.exit(0));
}
