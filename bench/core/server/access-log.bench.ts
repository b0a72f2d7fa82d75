/**
 * The access log's cost (core/server/access-log.ts, written by core/server/gateway-server.ts when a
 * response is done). Off (the default), a request pays the one boolean check it always paid, so
 * "off" is measured as that branch; on, the line is built and pino serialises it (here to a
 * stream that discards it, so the terminal or a pipe is not what is measured).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Bench } from 'tinybench';
import { Context } from '../../../core/plugin-api/context.ts';
import { accessLogLine } from '../../../core/server/access-log.ts';
import { createLogger } from '../../../core/observe/log.ts';

const req = {
  method: 'POST',
  url: '/mcp',
  headers: {},
  rawHeaders: ['Host', '127.0.0.1:4483', 'Content-Type', 'application/json', 'Mcp-Session-Id', '6f1c2b0e-5d3a-4c7e-9a51-2b8f0d4e7c11'],
} as unknown as IncomingMessage;
const discard = new Writable({ write: (_chunk, _encoding, done) => done() });

function mcpContext(accessLog: boolean): Context {
  const ctx = new Context(req, {} as ServerResponse, { log: createLogger('silent'), challenge: null, accessLog }, 0);
  ctx.mcp = true;
  ctx.route = 'mcp';
  ctx.message = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'demo_echo', arguments: { text: 'hi' } } };
  ctx.target = { backend: 'demo', name: 'echo' };
  return ctx;
}

export let sink: unknown;

export default function register(bench: Bench): void {
  const off = mcpContext(false);
  const on = mcpContext(true);
  const log = pino({ level: 'info' }, discard);
  bench.add('access log off: the per-request check', () => {
    if (off.scope.accessLog === true) sink = accessLogLine(off, 200, 0.0031);
  });
  bench.add('access log on: build the line (tools/call, session tag)', () => {
    sink = accessLogLine(on, 200, 0.0031);
  });
  bench.add('access log on: build and write the line (pino JSON)', () => {
    log.info(accessLogLine(on, 200, 0.0031), 'request');
  });
}
