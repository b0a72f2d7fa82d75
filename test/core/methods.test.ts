/**
 * The one MCP method table (core/protocol/methods.ts): what each reader takes from it — the subject a
 * message names (intake's ctx.target, the access log), the value Mcp-Name mirrors, the era rules,
 * list kinds — and that a method name chosen by a client finds nothing it should not.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LIST_CHANGED_NOTIFICATIONS, mcpMethod, mcpNameOf, METHODS, subjectOf } from '../../core/protocol/methods.ts';

const request = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id: 1, method, ...(params === undefined ? {} : { params }) });

describe('the MCP method table', () => {
  it('names the subject of each kind of message as its sender named it', () => {
    assert.deepEqual(subjectOf(request('tools/call', { name: 'echo' })), { kind: 'tool', name: 'echo' });
    assert.deepEqual(subjectOf(request('prompts/get', { name: 'greet' })), { kind: 'prompt', name: 'greet' });
    for (const method of ['resources/read', 'resources/subscribe', 'resources/unsubscribe']) assert.deepEqual(subjectOf(request(method, { uri: 'file:///a' })), { kind: 'resource', name: 'file:///a' });
    assert.deepEqual(subjectOf(request('completion/complete', { ref: { type: 'ref/prompt', name: 'greet' } })), { kind: 'prompt', name: 'greet' });
    assert.deepEqual(subjectOf(request('completion/complete', { ref: { type: 'ref/resource', uri: 'file:///{x}' } })), { kind: 'resource', name: 'file:///{x}' });
    for (const none of [request('tools/list'), request('tools/call', { name: 7 }), request('tasks/get', { taskId: 't' }), { jsonrpc: '2.0' as const, id: 1, result: {} }]) assert.equal(subjectOf(none), null);
    assert.equal(subjectOf([request('tools/call', { name: 'echo' })]), null, 'a batch names no one subject');
  });

  it('says what Mcp-Name mirrors, and where it is required', () => {
    assert.equal(mcpNameOf(request('tools/call', { name: 'echo' })), 'echo');
    assert.equal(mcpNameOf(request('resources/subscribe', { uri: 'file:///a' })), 'file:///a');
    assert.equal(mcpNameOf(request('completion/complete', { ref: { type: 'ref/prompt', name: 'greet' } })), undefined, 'completion has no Mcp-Name');
    const required = Object.entries(METHODS).filter(([, entry]) => entry.mcpName === 'required').map(([method]) => method);
    assert.deepEqual(required.sort(), ['prompts/get', 'resources/read', 'tools/call']);
  });

  it('keeps the era rules, the lists and what a server may ask', () => {
    const legacyOnly = Object.entries(METHODS).filter(([, entry]) => entry.eras === 'legacy').map(([method]) => method);
    assert.deepEqual(legacyOnly.sort(), ['initialize', 'logging/setLevel', 'ping', 'resources/subscribe', 'resources/unsubscribe']);
    assert.equal(mcpMethod('resources/templates/list')?.list, 'resourceTemplates');
    assert.equal(mcpMethod('elicitation/create')?.capability, 'elicitation');
    assert.deepEqual(LIST_CHANGED_NOTIFICATIONS.map(([list]) => list), ['tools', 'prompts', 'resources']);
  });

  it('finds nothing for a name every object inherits', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) assert.equal(mcpMethod(name), undefined, name);
    assert.equal(subjectOf(request('constructor', { name: 'x' })), null);
  });
});
