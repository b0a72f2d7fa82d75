import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../core/base/errors.ts';
import { parseMessages, type JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import { decodeHeaderValue, standardHeadersProblem } from '../../core/protocol/standard-headers.ts';

function parseError(body: string): GatewayError {
  try {
    parseMessages(Buffer.from(body));
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  assert.fail(`expected ${body} to be refused`);
}

describe('parseMessages', () => {
  it('accepts requests, notifications, responses and batches', () => {
    assert.deepEqual(parseMessages(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')), { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.deepEqual(parseMessages(Buffer.from('{"jsonrpc":"2.0","method":"notifications/initialized"}')), { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.deepEqual(parseMessages(Buffer.from('{"jsonrpc":"2.0","id":"s-1","result":{}}')), { jsonrpc: '2.0', id: 's-1', result: {} });
    assert.equal((parseMessages(Buffer.from('[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]')) as JsonRpcMessage[]).length, 2);
  });

  it('answers bytes that are not JSON with a parse error (-32700)', () => {
    const err = parseError('{"jsonrpc":');
    assert.equal(err.code, 'parse_error');
    assert.equal(err.status, 400);
    assert.equal(err.rpcCode, -32700);
  });

  const invalid: [string, string, RegExp][] = [
    ['a number', '42', /must be an object/],
    ['a wrong version', '{"jsonrpc":"1.0","id":1,"method":"x"}', /jsonrpc must be "2.0"/],
    ['an empty method', '{"jsonrpc":"2.0","id":1,"method":""}', /method must be a non-empty string/],
    ['a null id on a request', '{"jsonrpc":"2.0","id":null,"method":"x"}', /MCP forbids null ids/],
    ['array params', '{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}', /params must be an object/],
    ['a response with result and error', '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}', /exactly one of result and error/],
    ['a malformed error', '{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}', /integer code/],
    ['an empty batch', '[]', /empty batch/],
    ['a bad batch element', '[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0"}]', /batch element 1/],
  ];
  for (const [what, body, message] of invalid) {
    it(`refuses ${what} as an invalid request (-32600) naming the problem`, () => {
      const err = parseError(body);
      assert.equal(err.code, 'invalid_jsonrpc');
      assert.equal(err.rpcCode, -32600);
      assert.match(err.description, message);
    });
  }
});

describe('standard headers (2026-07-28)', () => {
  const call: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
  const read: JsonRpcMessage = { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri: 'file:///a' } };

  it('accepts absent headers and headers that agree with the body', () => {
    assert.equal(standardHeadersProblem(call, undefined, undefined), null);
    assert.equal(standardHeadersProblem(call, 'tools/call', 'echo'), null);
    assert.equal(standardHeadersProblem(read, 'resources/read', 'file:///a'), null);
  });

  it('refuses a method header that disagrees with the body (-32020)', () => {
    const err = standardHeadersProblem(call, 'tools/list', undefined);
    assert.ok(err);
    assert.equal(err.rpcCode, -32020);
    assert.match(err.description, /"tools\/list" does not match the body method "tools\/call"/);
  });

  it('refuses a name header that disagrees, or names a method without a name', () => {
    assert.match(standardHeadersProblem(call, 'tools/call', 'other')!.description, /"other" does not match "echo"/);
    assert.match(standardHeadersProblem({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, undefined, 'x')!.description, /has no name or uri/);
  });

  it('decodes the base64 sentinel for non-ASCII names, and refuses a malformed one', () => {
    const encoded = `=?base64?${Buffer.from('tööl').toString('base64')}?=`;
    assert.equal(decodeHeaderValue(encoded), 'tööl');
    assert.equal(standardHeadersProblem({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tööl' } }, 'tools/call', encoded), null);
    assert.equal(decodeHeaderValue('=?base64?not base64!?='), null);
    assert.match(standardHeadersProblem(call, 'tools/call', '=?base64?@@@?=')!.description, /not valid/);
  });
});
