/**
 * What a session keeps of each side's declarations (declarations.ts): the size of a value as
 * JSON, measured without walking past the limit; the client's capabilities refused past it; its
 * clientInfo cut short; a backend's capabilities kept as the gateway reads them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../core/base/errors.ts';
import { clientCapabilities, clientInfo, clientLogLevel, jsonSize, MAX_INSTRUCTIONS_CHARS, MAX_SERVER_PART_BYTES, serverCapabilities, serverInstructions } from '../../core/mcp/aggregate/declarations.ts';
import { AggregatedSession, MAX_TASK_ID_LENGTH } from '../../core/mcp/aggregate/session.ts';
import { paddedCapabilities } from '../helpers/session-state.ts';

describe('declarations a session keeps', () => {
  it('jsonSize is the length of the value as JSON, strings by their UTF-8 bytes', () => {
    const values: unknown[] = [
      {},
      [],
      { roots: { listChanged: true }, sampling: {}, elicitation: { form: {}, url: {} } },
      { a: [1, 2.5, -3e-7, null, false, 'x'], b: { c: { d: [] } }, 'é': 'ünïcode ✓', e: '' },
      paddedCapabilities(10_000, 7),
    ];
    for (const value of values) assert.equal(jsonSize(value, 1 << 20), Buffer.byteLength(JSON.stringify(value)), JSON.stringify(value).slice(0, 80));
  });

  it('jsonSize stops at the limit, and at nesting deeper than MCP messages may', () => {
    assert.equal(jsonSize({ a: 'x'.repeat(100) }, 100), Infinity);
    assert.equal(jsonSize({ a: 'x'.repeat(100) }, 108), 108);
    let deep: unknown = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    assert.equal(jsonSize(deep, 1 << 30), Infinity, 'a backend\'s value nested 100,000 deep does not overflow the stack');
  });

  it('the client\'s capabilities: kept as declared within the limit, refused past it with -32602 naming them and the limit', () => {
    const fits = paddedCapabilities(1000);
    assert.equal(clientCapabilities(fits, 1000, 'params.capabilities'), fits);
    assert.deepEqual(clientCapabilities(undefined, 1000, 'params.capabilities'), {});
    assert.throws(
      () => clientCapabilities(paddedCapabilities(1001), 1000, 'params.capabilities'),
      (err: GatewayError) => err.code === 'invalid_params' && err.rpcCode === -32602 && err.status === 400 && err.description === 'Invalid params: params.capabilities is larger than a session keeps: more than 1000 bytes as JSON (session.maxSessionSize)',
    );
    assert.throws(() => clientCapabilities([1], 1000, 'params.capabilities'), /params\.capabilities must be an object/);
    assert.throws(() => clientCapabilities('all', 1000, 'params.capabilities'), /params\.capabilities must be an object/);
  });

  it('the client\'s clientInfo: name, version and title, each cut to 256 characters, never inside a surrogate pair', () => {
    assert.deepEqual(clientInfo({ name: 'c', version: '1', title: 'C', icons: [{ src: 'x' }], websiteUrl: 'https://c.example' }), { name: 'c', version: '1', title: 'C' });
    assert.deepEqual(clientInfo({ name: 'n'.repeat(1_000_000), version: 7 }), { name: 'n'.repeat(256) });
    assert.deepEqual(clientInfo({ name: 'a'.repeat(255) + '😀' }), { name: 'a'.repeat(255) });
    assert.equal(clientInfo('me'), null);
    assert.equal(clientInfo(null), null);
  });

  it('a modern request\'s log level: one of MCP\'s, or none; anything else is -32602', () => {
    assert.equal(clientLogLevel(null), null);
    assert.equal(clientLogLevel('warning'), 'warning');
    assert.throws(() => clientLogLevel('verbose'), (err: GatewayError) => err.rpcCode === -32602 && /logLevel"\] must be one of debug, info, notice/.test(err.description));
  });

  it('a backend\'s capabilities: what the gateway reads, and tasks / experimental while small', () => {
    const kept = serverCapabilities({
      tools: { listChanged: true, extra: 'x'.repeat(100_000) },
      resources: { subscribe: true, listChanged: 'yes' },
      prompts: {},
      logging: {},
      completions: true,
      tasks: { requests: { tools: { call: {} } } },
      experimental: { big: 'x'.repeat(MAX_SERVER_PART_BYTES) },
      unknownFuture: { y: 'x'.repeat(100_000) },
    });
    assert.deepEqual(kept, { tools: { listChanged: true }, prompts: {}, resources: { subscribe: true }, logging: {}, completions: {}, tasks: { requests: { tools: { call: {} } } } });
    assert.deepEqual(serverCapabilities('none'), {});
    assert.equal(serverInstructions('i'.repeat(1_000_000))!.length, MAX_INSTRUCTIONS_CHARS);
    assert.equal(serverInstructions(42), undefined);
  });

  it('a task id a backend names is routed only up to MAX_TASK_ID_LENGTH characters (a session keeps up to 1024 of them)', () => {
    const session = new AggregatedSession({ id: 's', owner: null, protocolVersion: '2025-11-25', clientCapabilities: {}, clientInfo: null, backends: {}, missing: [] } as never);
    session.noteTask('t'.repeat(MAX_TASK_ID_LENGTH), 0);
    session.noteTask('u'.repeat(MAX_TASK_ID_LENGTH + 1), 1);
    session.noteTask('x'.repeat(4 << 20), 1);
    assert.deepEqual([...session.tasks.values()], [0]);
  });
});
