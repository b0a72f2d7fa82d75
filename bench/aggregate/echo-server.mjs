/**
 * The MCP server of the transports benchmark (bench/aggregate/stdio.ts): one `echo` tool
 * ({text} → the text), reached three ways, so that the gateway's cost of each transport is
 * measured against the same server:
 *
 *   node bench/aggregate/echo-server.mjs stdio [--sdk]        newline-delimited JSON-RPC on stdin/stdout
 *   PORT=N node bench/aggregate/echo-server.mjs http [--sdk]  streamable HTTP at /mcp (a session per
 *                                                             initialize, JSON responses)
 *   PORT=N node bench/aggregate/echo-server.mjs sse [--sdk]   legacy HTTP+SSE (2024-11-05): GET /sse,
 *                                                             POST /messages?sessionId=...
 *
 * By default a minimal server without dependencies answers (initialize, ping, tools/list,
 * tools/call), with the same few microseconds in every mode, so that what differs between the
 * rows is the gateway. `--sdk`: the official SDK's `McpServer` and its transports instead, the
 * server most stdio servers are (its streamable-HTTP transport costs several times its stdio one).
 *
 * The HTTP modes print `LISTENING <port>` (PORT=0: a free one). Plain JavaScript, so that `node`
 * starts it without tsx: a child's start-up time and memory are the server's own, not a loader's.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

const SDK = process.argv.includes('--sdk');
/** The SDK is loaded only with --sdk: the minimal server's start-up and memory are node's alone. */
const sdk = SDK
  ? {
      ...(await import('@modelcontextprotocol/sdk/server/mcp.js')),
      ...(await import('@modelcontextprotocol/sdk/server/sse.js')),
      ...(await import('@modelcontextprotocol/sdk/server/stdio.js')),
      ...(await import('@modelcontextprotocol/sdk/server/streamableHttp.js')),
      z: await import('zod'),
    }
  : null;

// ---- the minimal server: one answer function, three ways to carry it ----

const TOOLS = { tools: [{ name: 'echo', description: 'Returns its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }] };

/** The response to one message (null for a notification or a response). */
function answer(message) {
  if (message === null || typeof message !== 'object' || typeof message.method !== 'string' || message.id === undefined) return null;
  const reply = (result) => ({ jsonrpc: '2.0', id: message.id, result });
  switch (message.method) {
    case 'initialize':
      return reply({ protocolVersion: message.params?.protocolVersion ?? '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'bench-echo', version: '1' } });
    case 'ping':
      return reply({});
    case 'tools/list':
      return reply(TOOLS);
    case 'tools/call':
      if (message.params?.name === 'echo') return reply({ content: [{ type: 'text', text: String(message.params.arguments?.text ?? '') }] });
      return { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: `unknown tool ${message.params?.name}` } };
    default:
      return { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `method not found: ${message.method}` } };
  }
}

/** Each message of a body or line (a batch: each of its messages), answered. */
const answers = (text) => {
  const parsed = JSON.parse(text);
  return (Array.isArray(parsed) ? parsed : [parsed]).map(answer).filter((a) => a !== null);
};

function minimalStdio() {
  let pending = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop();
    let out = '';
    for (const line of lines) if (line.trim() !== '') for (const a of answers(line)) out += `${JSON.stringify(a)}\n`;
    if (out !== '') process.stdout.write(out);
  });
  process.stdin.on('end', () => process.exit(0));
}

const notFound = (res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"session not found"}}');

const body = (req) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

async function minimalHttp(req, res, sessions) {
  if (!req.url?.startsWith('/mcp')) return void res.writeHead(404).end();
  const id = req.headers['mcp-session-id'];
  if (req.method === 'DELETE') return void res.writeHead(sessions.delete(id) ? 200 : 404).end();
  if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
  const text = await body(req);
  const headers = { 'content-type': 'application/json' };
  if (id === undefined) {
    if (!text.includes('"initialize"')) return void res.writeHead(400).end();
    const sid = randomUUID();
    sessions.set(sid, true);
    headers['mcp-session-id'] = sid;
  } else if (!sessions.has(id)) {
    return notFound(res);
  }
  const out = answers(text);
  if (out.length === 0) return void res.writeHead(202).end();
  const json = JSON.stringify(out.length === 1 ? out[0] : out);
  headers['content-length'] = Buffer.byteLength(json);
  res.writeHead(200, headers).end(json);
}

async function minimalSse(req, res, sessions) {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method === 'GET' && url.pathname === '/sse') {
    const sid = randomUUID();
    sessions.set(sid, res);
    res.on('close', () => sessions.delete(sid));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(`event: endpoint\ndata: /messages?sessionId=${sid}\n\n`);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/messages') {
    const stream = sessions.get(url.searchParams.get('sessionId') ?? '');
    if (stream === undefined) return notFound(res);
    const out = answers(await body(req));
    res.writeHead(202).end('Accepted');
    for (const a of out) stream.write(`event: message\ndata: ${JSON.stringify(a)}\n\n`);
    return;
  }
  res.writeHead(404).end();
}

// ---- the SDK's server and transports (--sdk) ----

function echoServer() {
  const server = new sdk.McpServer({ name: 'bench-echo', version: '1' });
  server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: sdk.z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
}

/** Streamable HTTP: one transport and server per session, as the SDK's own examples keep them. */
async function sdkHttp(req, res, sessions) {
  if (!req.url?.startsWith('/mcp')) return void res.writeHead(404).end();
  const id = req.headers['mcp-session-id'];
  let transport = typeof id === 'string' ? sessions.get(id) : undefined;
  if (transport === undefined) {
    if (id !== undefined) return notFound(res);
    const made = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, enableJsonResponse: true, onsessioninitialized: (sid) => sessions.set(sid, made) });
    made.onclose = () => made.sessionId !== undefined && sessions.delete(made.sessionId);
    await echoServer().connect(made);
    transport = made;
  }
  await transport.handleRequest(req, res);
}

/** Legacy HTTP+SSE: the GET stream names the endpoint its session POSTs to. */
async function sdkSse(req, res, sessions) {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method === 'GET' && url.pathname === '/sse') {
    const transport = new sdk.SSEServerTransport('/messages', res);
    sessions.set(transport.sessionId, transport);
    res.on('close', () => sessions.delete(transport.sessionId));
    await echoServer().connect(transport);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/messages') {
    const transport = sessions.get(url.searchParams.get('sessionId') ?? '');
    if (transport === undefined) return notFound(res);
    await transport.handlePostMessage(req, res);
    return;
  }
  res.writeHead(404).end();
}

const mode = process.argv[2];
if (mode === 'stdio') {
  if (SDK) await echoServer().connect(new sdk.StdioServerTransport());
  else minimalStdio();
} else if (mode === 'http' || mode === 'sse') {
  const sessions = new Map();
  const serve = mode === 'http' ? (SDK ? sdkHttp : minimalHttp) : SDK ? sdkSse : minimalSse;
  const server = createServer((req, res) => {
    serve(req, res, sessions).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
  process.on('SIGTERM', () => process.exit(0));
} else {
  process.stderr.write('usage: echo-server.mjs stdio|http|sse [--sdk] (PORT=N for http and sse)\n');
  process.exit(2);
}
