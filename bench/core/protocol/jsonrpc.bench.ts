/**
 * JSON-RPC framing on the hot path (core/protocol/jsonrpc.ts): what parsing and checking one
 * `tools/call` body costs, next to the bare JSON.parse it is built on.
 */
import type { Bench } from 'tinybench';
import { messageProblem, parseMessages } from '../../../core/protocol/jsonrpc.ts';

const BODY = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}');
const TEXT = BODY.toString();
const MESSAGE = JSON.parse(TEXT) as unknown;

export default function register(bench: Bench): void {
  bench
    .add('jsonrpc: JSON.parse(string) baseline', () => {
      JSON.parse(TEXT);
    })
    .add('jsonrpc: buffer.toString + JSON.parse', () => {
      JSON.parse(BODY.toString('utf8'));
    })
    .add('jsonrpc: messageProblem (validation only)', () => {
      messageProblem(MESSAGE);
    })
    .add('jsonrpc: parseMessages (tools/call body)', () => {
      parseMessages(BODY);
    });
}
