/**
 * The access log's cost (core/server/access-log.ts, a subscriber of the request seam's end). Off
 * (the default), it is not subscribed: the request pays nothing for it; on, the line is built
 * from the request's record and pino serialises it (here to a stream that discards it, so the
 * terminal or a pipe is not what is measured). The record itself is the seam's, built for the
 * route metrics whether the access log is on or not (bench/core/observe/seam.bench.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Bench } from 'tinybench';
import { Context } from '../../../core/plugin-api/context.ts';
import { accessLogLine } from '../../../core/server/access-log.ts';
import { endObservedRequest } from '../../../core/server/request-observation.ts';
import { RequestRecord } from '../../../core/observe/request-record.ts';
import { createLogger } from '../../../core/observe/log.ts';

const req = {
  method: 'POST',
  url: '/mcp',
  headers: {},
  rawHeaders: ['Host', '127.0.0.1:4483', 'Content-Type', 'application/json', 'Mcp-Session-Id', '6f1c2b0e-5d3a-4c7e-9a51-2b8f0d4e7c11'],
} as unknown as IncomingMessage;
const discard = new Writable({ write: (_chunk, _encoding, done) => done() });

function mcpRecord(): RequestRecord {
  const ctx = new Context(req, {} as ServerResponse, { log: createLogger('silent'), challenge: null, accessLog: true }, 0);
  ctx.mcp = true;
  ctx.route = 'mcp';
  ctx.message = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'demo_echo', arguments: { text: 'hi' } } };
  ctx.target = { backend: 'demo', name: 'echo' };
  const record = new RequestRecord({}, ctx.requestId, 'POST', ctx.path, 0, ctx);
  endObservedRequest(record, ctx, 200, 0.0031);
  return record;
}

export let sink: unknown;

export default function register(bench: Bench): void {
  const on = mcpRecord();
  const log = pino({ level: 'info' }, discard);
  bench.add('access log on: build the line (tools/call, session tag)', () => {
    sink = accessLogLine(on);
  });
  bench.add('access log on: build and write the line (pino JSON)', () => {
    log.info(accessLogLine(on), 'request');
  });
}
