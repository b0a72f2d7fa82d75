/**
 * The observation seam's cost per request (core/observe/channels.ts, core/server/request-observation.ts):
 * what a request pays for its record when only the route metrics listen (the default: built,
 * filled in at the end, published to one subscriber), the check an exchange makes when nobody
 * listens to the upstream channels, and what an exchange pays for its record when someone does.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import diagnostics from 'node:diagnostics_channel';
import type { Bench } from 'tinybench';
import { Context } from '../../../core/plugin-api/context.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { CHANNELS, upstreamObserved } from '../../../core/observe/channels.ts';
import { UpstreamRecord } from '../../../core/observe/upstream-record.ts';
import { endObservedRequest, observedRequest } from '../../../core/server/request-observation.ts';

const req = {
  method: 'POST',
  url: '/mcp',
  headers: {},
  rawHeaders: ['Host', '127.0.0.1:4483', 'Content-Type', 'application/json', 'Mcp-Session-Id', '6f1c2b0e-5d3a-4c7e-9a51-2b8f0d4e7c11'],
} as unknown as IncomingMessage;
const scope = { log: createLogger('silent'), challenge: null };
const server = {};
const HEADERS = ['accept', 'application/json, text/event-stream', 'mcp-protocol-version', '2025-06-18', 'x-request-id', 'abc'];

export let sink: unknown;

function serve(this: unknown, ctx: Context): void {
  ctx.mcp = true;
  ctx.route = 'mcp';
  ctx.message = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'demo_echo', arguments: { text: 'hi' } } };
  ctx.target = { backend: 'demo', name: 'echo' };
}

export default function register(bench: Bench): void {
  const onEnd = (message: unknown): void => {
    sink = message;
  };
  bench.add('seam: a request with no subscriber (the check, then the request as it is)', () => {
    const ctx = new Context(req, {} as ServerResponse, scope, 0);
    observedRequest(server, ctx, serve, null);
    sink = ctx;
  });
  bench.add(
    'seam: a request with one end subscriber (record built, filled in, published)',
    () => {
      const ctx = new Context(req, {} as ServerResponse, scope, 0);
      observedRequest(server, ctx, serve, null);
      endObservedRequest(ctx.record!, ctx, 200, 0.003);
    },
    { beforeAll: () => diagnostics.subscribe(CHANNELS.requestEnd, onEnd), afterAll: () => void diagnostics.unsubscribe(CHANNELS.requestEnd, onEnd) },
  );
  bench.add('seam: an exchange nobody observes (the check)', () => {
    sink = upstreamObserved();
  });
  bench.add('seam: an exchange observed (record with its headers copied)', () => {
    sink = new UpstreamRecord(null, 'demo', 'streamable-http', 'POST', '/mcp', HEADERS, null);
  });
}
