/**
 * The request's byte path of a 2026-07-28 client bridged to a legacy backend, and of an aggregated
 * request sent as the client's bytes (core/protocol/json-scan.ts), next to JSON.parse of the same
 * bytes: readAlikeByAll on the bench's tools/call request (every bridged request, before its
 * envelope is cut out), and one with an object of 40 keys (past the 16 compared as bytes: a Set
 * of their spellings). The answer's: answer-bytes.bench.ts.
 */
import type { Bench } from 'tinybench';
import { readAlikeByAll, readAlikeGenerally } from '../../../core/protocol/json-scan.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };
const REQUEST = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 't0', arguments: { text: 'hi' }, _meta: META } }));
const WIDE = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 't0', arguments: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, i])), _meta: META } }));

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

export default function register(bench: Bench): void {
  bench
    .add(`json-scan: readAlikeByAll, a tools/call with its envelope (${REQUEST.length} B)`, () => {
      sink = readAlikeByAll(REQUEST);
    })
    .add(`  the general way alone (JavaScript) on the same bytes`, () => {
      sink = readAlikeGenerally(REQUEST);
    })
    .add(`  reference: JSON.parse of the same bytes`, () => {
      sink = JSON.parse(REQUEST.toString('utf8'));
    })
    .add(`json-scan: readAlikeByAll, arguments of 40 keys (${WIDE.length} B)`, () => {
      sink = readAlikeByAll(WIDE);
    });
}
