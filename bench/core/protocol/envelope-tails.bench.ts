/**
 * A modern request read by its known envelope (core/protocol/envelope-tails.ts), next to the
 * ordinary read of the same bytes (parseMessages: JSON.parse of the whole body), and the cut a
 * legacy backend gets. The body is the bridged load row's request (bench/load/modes.ts).
 */
import type { Bench } from 'tinybench';
import { EnvelopeTails, withoutEnvelope } from '../../../core/protocol/envelope-tails.ts';
import { META } from '../../../core/protocol/era.ts';
import { parseMessages, type JsonRpcRequest } from '../../../core/protocol/jsonrpc.ts';

const MESSAGE: JsonRpcRequest = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: 'echo',
    arguments: { text: 'hi' },
    _meta: { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: {}, [META.clientInfo]: { name: 'bench', version: '1' } },
  },
};
const BODY = Buffer.from(JSON.stringify(MESSAGE));

export default function register(bench: Bench): void {
  const tails = new EnvelopeTails();
  tails.learn(MESSAGE, BODY);
  const at = tails.parse(BODY)!.at;
  bench
    .add('envelope-tails: parseMessages (the ordinary read of a modern tools/call)', () => {
      parseMessages(BODY);
    })
    .add('envelope-tails: parse (the same bytes, read by their known envelope)', () => {
      tails.parse(BODY);
    })
    .add('envelope-tails: withoutEnvelope (the bytes a legacy backend gets)', () => {
      withoutEnvelope(BODY, at);
    });
}
