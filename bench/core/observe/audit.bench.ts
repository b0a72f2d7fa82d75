/**
 * What the audit trail costs per record (core/observe/audit/): a tools/call's record built from the
 * request's RequestRecord (its fields, the principal, the session's digest), as JSON, and written
 * through SonicBoom (the file's writer, here to /dev/null: the writing's CPU, not a disk's).
 * The load benchmark's `audit trail on, to a file` row measures it per request, whole.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import pino from 'pino';
import type { Bench } from 'tinybench';
import { Context } from '../../../core/plugin-api/context.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { RequestRecord } from '../../../core/observe/request-record.ts';
import { requestLine } from '../../../core/observe/audit/audit-record.ts';

const req = {
  method: 'POST',
  url: '/mcp',
  headers: {},
  rawHeaders: ['Host', '127.0.0.1:4483', 'Content-Type', 'application/json', 'Mcp-Session-Id', '6f1c2b0e-5d3a-4c7e-9a51-2b8f0d4e7c11'],
  socket: { remoteAddress: '127.0.0.1' },
} as unknown as IncomingMessage;
const scope = { log: createLogger('silent'), challenge: null };

export let sink: unknown;

/** A record as a tools/call ends it, filled in as request-observation.ts does. */
function endedRecord(): RequestRecord {
  const ctx = new Context(req, {} as ServerResponse, scope, 0);
  const record = new RequestRecord({}, 'b1f0c2d3-7', 'POST', '/mcp', performance.now(), ctx);
  record.route = 'mcp';
  record.status = 200;
  record.seconds = 0.0021;
  record.principal = { subject: 'alice@example.com', issuer: 'https://idp.example.com', clientId: 'inspector' };
  record.rpcMethod = 'tools/call';
  record.rpcId = 7;
  record.subjectKind = 'tool';
  record.subjectName = 'github_search_code';
  record.backend = 'github';
  record.noteSession('6f1c2b0e-5d3a-4c7e-9a51-2b8f0d4e7c11');
  return record;
}

export default function register(bench: Bench): void {
  const out = pino.destination({ dest: '/dev/null', sync: false, minLength: 8192 });
  bench.add('audit: a tools/call record built (a fresh RequestRecord, its session digest)', () => {
    sink = requestLine(endedRecord(), 'mcp_tool_call', 'gatehouse-vmcp');
  });
  bench.add('audit: a tools/call record built, as JSON', () => {
    sink = `${JSON.stringify(requestLine(endedRecord(), 'mcp_tool_call', 'gatehouse-vmcp'))}\n`;
  });
  bench.add('audit: a tools/call record built, as JSON, written (SonicBoom to /dev/null, 8 KiB batches)', () => {
    out.write(`${JSON.stringify(requestLine(endedRecord(), 'mcp_tool_call', 'gatehouse-vmcp'))}\n`);
  });
  bench.add('audit: the RequestRecord alone (what the seam builds anyway, for comparison)', () => {
    sink = endedRecord();
  });
}
