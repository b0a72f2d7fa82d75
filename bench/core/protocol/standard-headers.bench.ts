/**
 * The 2026-07-28 standard headers on the hot path (core/protocol/standard-headers.ts): checking a
 * client's Mcp-Method and Mcp-Name against a `tools/call` body.
 */
import type { Bench } from 'tinybench';
import { standardHeadersProblem } from '../../../core/protocol/standard-headers.ts';

const MESSAGE = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } } as const;

export default function register(bench: Bench): void {
  bench.add('standard headers: standardHeadersProblem (headers present)', () => {
    standardHeadersProblem(MESSAGE, 'tools/call', 'echo');
  });
}
