/**
 * JSON-RPC framing costs on the hot path: parsing a tools/call body and serialising a response.
 * A convention example for bench/run.ts (to be replaced by benchmarks of core/mcp/jsonrpc.ts).
 */
import type { Bench } from 'tinybench';

const BODY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}';
const BODY_BYTES = Buffer.from(BODY);
const RESPONSE = {
  jsonrpc: '2.0',
  id: 1,
  result: { content: [{ type: 'text', text: 'echo: hi' }], structuredContent: { text: 'hi', length: 2 }, isError: false },
};

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

export default function register(bench: Bench): void {
  bench
    .add('JSON.parse(tools/call body string)', () => {
      sink = JSON.parse(BODY);
    })
    .add('JSON.parse(body Buffer → utf8 string)', () => {
      sink = JSON.parse(BODY_BYTES.toString('utf8'));
    })
    .add('Buffer.from(JSON.stringify(response))', () => {
      sink = Buffer.from(JSON.stringify(RESPONSE));
    });
}
