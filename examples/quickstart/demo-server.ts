/**
 * A small demo MCP server for the quickstart: a few tools, a prompt and a resource, served over
 * streamable HTTP with the official SDK. Stateful sessions, one transport per session.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function demoMcpServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echoes the text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: `${name} says: ${text}` }] }),
  );
  server.registerTool(
    'add',
    { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }),
  );
  server.registerTool('current_time', { description: 'The server clock, ISO 8601' }, async () => ({
    content: [{ type: 'text', text: new Date().toISOString() }],
  }));
  server.registerPrompt(
    'greeting',
    { description: 'A friendly greeting', argsSchema: { name: z.string() } },
    ({ name: who }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${who}.` } }] }),
  );
  server.registerResource('readme', `demo://${name}/readme`, { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: `This is the ${name} demo server behind Gatehouse.` }],
  }));
  return server;
}

/** Starts the demo server on 127.0.0.1:`port`; resolves with its MCP URL. */
export function startDemoServer(name: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  return serveMcp(() => demoMcpServer(name), port);
}

/** Serves the MCP servers `create` makes, one per session, on 127.0.0.1:`port` at /mcp. */
export async function serveMcp(create: () => McpServer, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http: Server = createServer(async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      if (req.method !== 'POST' || sessionId !== undefined) {
        res.writeHead(sessionId === undefined ? 400 : 404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId !== undefined) transports.delete(created.sessionId);
      };
      await create().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      for (const transport of transports.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
