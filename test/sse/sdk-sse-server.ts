/**
 * A real MCP 2024-11-05 HTTP+SSE server in this process: the SDK's deprecated
 * `SSEServerTransport` and an `McpServer` per session, on node:http bound to 127.0.0.1 (GET /sse
 * opens a session, POST /messages?sessionId=… takes its messages, as the SDK's own example does).
 * An unknown session's POST is answered 404.
 *
 * Tools: echo {text} -> "echo: <text>"; steps {count} -> notifications/progress per step (with a
 * progressToken), then "done".
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import * as z from 'zod';

export interface SdkSseServer {
  readonly url: string;
  /** The live sessions, by id. */
  readonly sessions: Map<string, SSEServerTransport>;
  /** Heads of the requests received (to check what the gateway sent along). */
  readonly heads: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

function mcpServer(): McpServer {
  const mcp = new McpServer({ name: 'sdk-sse', version: '1.0.0' });
  mcp.registerTool('echo', { description: 'Echoes its text.', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo: ${text}` }],
  }));
  mcp.registerTool('steps', { description: 'Reports progress per step.', inputSchema: { count: z.number() } }, async ({ count }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= count; i++) {
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: count } });
    }
    return { content: [{ type: 'text', text: 'done' }] };
  });
  return mcp;
}

export async function startSdkSseServer(): Promise<SdkSseServer> {
  const sessions = new Map<string, SSEServerTransport>();
  const heads: SdkSseServer['heads'] = [];
  const server: Server = createServer((req, res) => {
    heads.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res);
      sessions.set(transport.sessionId, transport);
      res.on('close', () => sessions.delete(transport.sessionId));
      void mcpServer().connect(transport);
      return;
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = sessions.get(url.searchParams.get('sessionId') ?? '');
      if (transport === undefined) {
        res.writeHead(404).end('Session not found');
        return;
      }
      void transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    sessions,
    heads,
    async close() {
      for (const transport of sessions.values()) await transport.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
