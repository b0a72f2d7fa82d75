import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { backendInfo } from '../../core/plugin-api/backend.ts';
import { Chain, runHooks, runResponseHooks } from '../../core/server/chain.ts';
import { Context } from '../../core/plugin-api/context.ts';
import { GatewayError } from '../../core/base/errors.ts';
import type { JsonRpcMessage, JsonRpcResponse } from '../../core/protocol/jsonrpc.ts';
import { createLogger } from '../../core/observe/log.ts';
import type { Plugin } from '../../core/plugin-api/plugin.ts';
import { Reply } from '../../core/plugin-api/reply.ts';

const noTimer = () => null;

function context(): Context {
  const req = { url: '/mcp', headers: {}, rawHeaders: [] } as unknown as IncomingMessage;
  return new Context(req, {} as ServerResponse, { log: createLogger('silent'), challenge: null }, 0);
}

describe('Chain', () => {
  it('compiles unused phases to null (one branch per request)', () => {
    const chain = new Chain([{ name: 'empty' }], noTimer);
    assert.equal(chain.authenticate, null);
    assert.equal(chain.authorize, null);
    assert.equal(chain.messageHooks('tools/call'), null);
    assert.equal(chain.responseHooks('tools/list'), null);
    assert.equal(chain.compileBackend(backendInfo('b', 'http://127.0.0.1:1/mcp', 1000)), null);
    assert.equal(chain.hasMessageHooks, false);
  });

  it('keeps plugin order within a phase and merges method-specific hooks with generic ones', () => {
    const calls: string[] = [];
    const plugins: Plugin[] = [
      { name: 'a', onMessage: () => void calls.push('a:any') },
      { name: 'b', onMessage: { methods: ['tools/call'], handle: () => void calls.push('b:call') } },
      { name: 'c', onMessage: () => void calls.push('c:any') },
    ];
    const chain = new Chain(plugins, noTimer);
    const msg: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call' };
    runHooks(chain.messageHooks('tools/call')!, context(), msg);
    assert.deepEqual(calls, ['a:any', 'b:call', 'c:any']);
    calls.length = 0;
    runHooks(chain.messageHooks('tools/list')!, context(), msg);
    assert.deepEqual(calls, ['a:any', 'c:any']);
  });

  it('stays synchronous while hooks are, and stops at the first answer', () => {
    const calls: string[] = [];
    const deny = new GatewayError('forbidden', 'no');
    const hooks = [() => void calls.push('1'), () => (calls.push('2'), deny), () => void calls.push('3')];
    const outcome = runHooks(hooks, context(), undefined);
    assert.equal(outcome, deny, 'a sync chain returns its answer, not a promise');
    assert.deepEqual(calls, ['1', '2']);
  });

  it('switches to a promise only from the first async hook, and continues in order', async () => {
    const calls: string[] = [];
    const hooks = [
      () => void calls.push('sync'),
      async () => void calls.push('async'),
      () => (calls.push('after'), Reply.json(418, {})),
      () => void calls.push('never'),
    ];
    const outcome = runHooks(hooks, context(), undefined);
    assert.ok(outcome instanceof Promise);
    const settled = await outcome;
    assert.ok(settled instanceof Reply && settled.status === 418);
    assert.deepEqual(calls, ['sync', 'async', 'after']);
  });

  it('passes each response hook the previous one\'s replacement', async () => {
    const response: JsonRpcResponse = { jsonrpc: '2.0', id: 1, result: { n: 1 } };
    const add = (r: JsonRpcResponse): JsonRpcResponse => ({ ...r, result: { n: (r.result as { n: number }).n + 1 } });
    const sync = runResponseHooks([(_c, r) => add(r), () => undefined, (_c, r) => add(r)], context(), response);
    assert.deepEqual(sync, { jsonrpc: '2.0', id: 1, result: { n: 3 } });
    const async = await runResponseHooks([async (_c, r) => add(r), (_c, r) => add(r)], context(), response);
    assert.deepEqual(async, { jsonrpc: '2.0', id: 1, result: { n: 3 } });
  });

  it('compiles prepareBackend per backend, once', () => {
    let offered = 0;
    const plugin: Plugin = {
      name: 'inject',
      prepareBackend: (backend) => {
        offered++;
        return backend.name === 'secured' ? (_ctx, headers) => headers.set('authorization', 'Bearer x') : null;
      },
    };
    const chain = new Chain([plugin], noTimer);
    const secured = backendInfo('secured', 'http://127.0.0.1:1/mcp', 1000);
    const open = backendInfo('open', 'http://127.0.0.1:2/mcp', 1000);
    assert.equal(chain.backendHooks(secured)!.length, 1);
    assert.equal(chain.backendHooks(open), null);
    chain.backendHooks(secured);
    assert.equal(offered, 2, 'each backend is offered to the plugin once');
  });

  it('times each hook into the plugin/phase observer', () => {
    const seen: string[] = [];
    const chain = new Chain([{ name: 'p', authenticate: () => undefined }], (plugin, phase) => (s) => seen.push(`${plugin}/${phase}/${s >= 0}`));
    runHooks(chain.authenticate!, context(), undefined);
    assert.deepEqual(seen, ['p/authenticate/true']);
  });
});
