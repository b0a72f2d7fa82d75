/**
 * A backend's answer checked as bytes (core/protocol/answer-bytes.ts) before it reaches a client
 * through an aggregated or bridged gateway, next to reading and writing it anew: as Python's SDK
 * and most servers spell it, as the TypeScript SDK does (result first), and with white space (the
 * general loop).
 */
import type { Bench } from 'tinybench';
import { completeResultBytes, isPlainResult } from '../../../core/protocol/answer-bytes.ts';

const RESULT = { content: [{ type: 'text', text: 'hi' }], isError: false };
const ANSWER = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, result: RESULT }));
const RESULT_FIRST = Buffer.from(JSON.stringify({ result: RESULT, jsonrpc: '2.0', id: 7 }));
const SPACED = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 7, result: RESULT }, null, 1));

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

export default function register(bench: Bench): void {
  bench
    .add(`answer-bytes: completeResultBytes, a tools/call answer (${ANSWER.length} B)`, () => {
      sink = completeResultBytes(ANSWER, '7');
    })
    .add(`  reference: JSON.parse and JSON.stringify of the same bytes`, () => {
      sink = Buffer.from(JSON.stringify(JSON.parse(ANSWER.toString('utf8'))));
    })
    .add(`answer-bytes: isPlainResult, the TypeScript SDK's spelling (${RESULT_FIRST.length} B)`, () => {
      sink = isPlainResult(RESULT_FIRST, '7');
    })
    .add(`answer-bytes: isPlainResult, with white space (${SPACED.length} B)`, () => {
      sink = isPlainResult(SPACED, '7');
    });
}
