/**
 * The cedar-authz plugin's view (plugins/cedar-authz/view.ts, plugin.ts) on Contexts built here,
 * as the gateway asks it: `key` per caller, `visible` per list, `admit` per call of a visible item.
 * ToolHive's documented example policies (docs/authz.md), each with a caller it allows and one
 * it denies; the group claim and the entity store's hierarchy; calls decided with their
 * arguments (`arg_*`), a tool with an argument-conditional permit seen because some arguments
 * allow it; resource templates; anonymous callers; the denial's JSON-RPC error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError, rpcErrorResponse } from '../../core/base/errors.ts';
import type { HttpRequest, HttpResponse } from '../../core/http/types.ts';
import { createLogger } from '../../core/observe/log.ts';
import { Context, Principal } from '../../core/plugin-api/context.ts';
import type { PluginHost } from '../../core/plugin-api/plugin.ts';
import type { View, ViewItem } from '../../core/plugin-api/view.ts';
import type { ListKind } from '../../core/protocol/methods.ts';
import type { JsonRpcRequest } from '../../core/protocol/jsonrpc.ts';
import type { AuthzPolicyConfig } from '../../core/config/vmcp-types.ts';
import { settingsOf } from '../../plugins/cedar-authz/config.ts';
import { createCedarAuthorizer } from '../../plugins/cedar-authz/engine.ts';
import { cedarAuthz } from '../../plugins/cedar-authz/plugin.ts';
import { cedarView } from '../../plugins/cedar-authz/view.ts';

const log = createLogger('silent');

function authz(policies: string[], more: Partial<AuthzPolicyConfig> = {}): AuthzPolicyConfig {
  return { policies, entitiesJson: '[]', groupClaimName: '', roleClaimName: '', groupEntityType: 'THVGroup', multiValuedClaims: [], source: 'test', ...more };
}

/** The plugin's view, made as the gateway makes it. */
async function view(policies: string[], more: Partial<AuthzPolicyConfig> = {}, anonymous = false): Promise<View> {
  const plugin = await cedarAuthz.create({ authz: authz(policies, more), serverName: 'vmcp', anonymous }, { log } as unknown as PluginHost);
  return plugin.view!;
}

/** A request's Context whose principal holds `claims` (null: no principal). */
function ctx(claims: Record<string, unknown> | null): Context {
  const req = { url: '/mcp', headers: {}, rawHeaders: [] } as unknown as HttpRequest;
  const c = new Context(req, {} as HttpResponse, { log, challenge: null }, 0);
  c.principal = claims === null ? null : new Principal(String(claims.sub ?? ''), claims, 'token');
  return c;
}

const user = (sub: string, claims: Record<string, unknown> = {}) => ctx({ sub, iss: 'https://idp.example', exp: 1_900_000_000, ...claims });

function item(kind: ListKind, name: string, extra: Partial<ViewItem> = {}): ViewItem {
  return { kind, backend: 'demo', name, original: name, item: kind === 'tools' || kind === 'prompts' ? { name } : { uri: name }, ...extra };
}
const tool = (name: string, extra: Partial<ViewItem> = {}) => item('tools', name, extra);

/** The names of `items` the caller sees. */
async function seen(v: View, c: Context, items: ViewItem[]): Promise<string[]> {
  const flags = await v.visible(c, items);
  return items.filter((_, i) => flags[i]).map((it) => it.name);
}

let nextId = 1;
const call = (name: string, args?: Record<string, unknown>): JsonRpcRequest => ({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, ...(args === undefined ? {} : { arguments: args }) } });
const request = (method: string, params: Record<string, unknown>): JsonRpcRequest => ({ jsonrpc: '2.0', id: nextId++, method, params });

/** `admit`'s answer: 'through' or the denial's message. */
async function admitted(v: View, c: Context, it: ViewItem, req: JsonRpcRequest): Promise<string> {
  const result = await v.admit!(c, it, req);
  if (result === undefined) return 'through';
  assert.ok(result instanceof GatewayError);
  return result.description;
}

const TOOLS = [tool('weather'), tool('calculator'), tool('deploy')];

describe("ToolHive's documented policies, each with a caller it allows and one it denies", () => {
  it('a specific tool: everyone sees weather, no one the others (default deny)', async () => {
    const v = await view(['permit(principal, action == Action::"call_tool", resource == Tool::"weather");']);
    assert.deepEqual(await seen(v, user('alice'), TOOLS), ['weather']);
    assert.deepEqual(await seen(v, ctx({ iss: 'x' }), TOOLS), [], 'a token without sub is denied everything, as in ToolHive');
  });

  it('a specific prompt, and a resource by its exact URI', async () => {
    const v = await view([
      'permit(principal, action == Action::"get_prompt", resource == Prompt::"greeting");',
      'permit(principal, action == Action::"read_resource", resource == Resource::"data");',
      'permit(principal, action == Action::"read_resource", resource == Resource::"file:///etc/passwd");',
    ]);
    assert.deepEqual(await seen(v, user('alice'), [item('prompts', 'greeting'), item('prompts', 'farewell')]), ['greeting']);
    assert.deepEqual(await seen(v, user('alice'), [item('resources', 'data'), item('resources', 'file:///etc/passwd'), item('resources', 'file:///etc/shadow')]), ['data', 'file:///etc/passwd']);
    assert.deepEqual(await seen(v, user('alice'), [item('tools', 'greeting')]), [], 'the same name under another action');
  });

  it('a specific client calls any tool: user123 sees all, user456 none', async () => {
    const v = await view(['permit(principal == Client::"user123", action == Action::"call_tool", resource);']);
    assert.deepEqual(await seen(v, user('user123'), TOOLS), ['weather', 'calculator', 'deploy']);
    assert.deepEqual(await seen(v, user('user456'), TOOLS), []);
  });

  it('a role claim: an admin sees every tool, a developer none, a token without roles none (an evaluation error denies)', async () => {
    const v = await view(['permit(principal, action == Action::"call_tool", resource) when { principal.claim_roles.contains("admin") };']);
    assert.deepEqual(await seen(v, user('alice', { roles: ['admin'] }), TOOLS), ['weather', 'calculator', 'deploy']);
    assert.deepEqual(await seen(v, user('bob', { roles: ['developer'] }), TOOLS), []);
    assert.deepEqual(await seen(v, user('carol'), TOOLS), []);
  });

  it('a claim on the principal and in the context: John Doe sees weather, Jane Roe does not', async () => {
    for (const where of ['principal', 'context']) {
      const v = await view([`permit(principal, action == Action::"call_tool", resource == Tool::"weather") when { ${where}.claim_name == "John Doe" };`]);
      assert.deepEqual(await seen(v, user('a', { name: 'John Doe' }), TOOLS), ['weather'], where);
      assert.deepEqual(await seen(v, user('b', { name: 'Jane Roe' }), TOOLS), [], where);
    }
  });

  it('arguments: calculator for add and subtract, weather for two cities; seen (some arguments allow them), each call decided with its arguments', async () => {
    const v = await view([
      'permit(principal, action == Action::"call_tool", resource == Tool::"calculator") when { resource.arg_operation == "add" || resource.arg_operation == "subtract" };',
      'permit(principal, action == Action::"call_tool", resource == Tool::"weather") when { context.arg_location == "New York" || context.arg_location == "London" };',
    ]);
    const alice = user('alice');
    assert.deepEqual(await seen(v, alice, TOOLS), ['weather', 'calculator'], 'deploy: no arguments could allow it');
    assert.equal(await admitted(v, alice, tool('calculator'), call('calculator', { operation: 'add', a: 1, b: 2 })), 'through');
    assert.equal(await admitted(v, alice, tool('calculator'), call('calculator', { operation: 'multiply' })), 'call denied by authorization policy');
    assert.equal(await admitted(v, alice, tool('calculator'), call('calculator')), 'call denied by authorization policy', 'no arguments: the read errors, a deny');
    assert.equal(await admitted(v, alice, tool('weather'), call('weather', { location: 'London' })), 'through');
    assert.equal(await admitted(v, alice, tool('weather'), call('weather', { location: 'Paris' })), 'call denied by authorization policy');
  });

  it('claims and arguments combined: with decimals, as ToolHive\'s numbers are (its `<=` example is an error, hence a deny)', async () => {
    const documented = await view(['permit(principal, action == Action::"call_tool", resource == Tool::"sensitive_data") when { principal.claim_roles.contains("data_analyst") && resource.arg_data_level <= principal.claim_clearance_level };']);
    const analyst = user('alice', { roles: ['data_analyst'], clearance_level: 3 });
    assert.equal(await admitted(documented, analyst, tool('sensitive_data'), call('sensitive_data', { data_level: 2 })), 'call denied by authorization policy');
    const v = await view(['permit(principal, action == Action::"call_tool", resource == Tool::"sensitive_data") when { principal.claim_roles.contains("data_analyst") && resource.arg_data_level.lessThanOrEqual(principal.claim_clearance_level) };']);
    assert.deepEqual(await seen(v, analyst, [tool('sensitive_data')]), ['sensitive_data']);
    assert.deepEqual(await seen(v, user('bob', { roles: ['viewer'], clearance_level: 9 }), [tool('sensitive_data')]), [], 'no arguments could make a viewer an analyst');
    assert.equal(await admitted(v, analyst, tool('sensitive_data'), call('sensitive_data', { data_level: 2 })), 'through');
    assert.equal(await admitted(v, analyst, tool('sensitive_data'), call('sensitive_data', { data_level: 5 })), 'call denied by authorization policy');
  });

  it('forbid wins over permit, and over arguments', async () => {
    const v = await view([
      'permit(principal, action == Action::"call_tool", resource);',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"deploy");',
      'forbid(principal, action == Action::"call_tool", resource == Tool::"calculator") when { context has arg_force && context.arg_force };',
    ]);
    assert.deepEqual(await seen(v, user('alice'), TOOLS), ['weather', 'calculator']);
    assert.equal(await admitted(v, user('alice'), tool('calculator'), call('calculator', { force: false })), 'through');
    assert.equal(await admitted(v, user('alice'), tool('calculator'), call('calculator', { force: true })), 'call denied by authorization policy');
  });
});

describe('groups and roles', () => {
  it('the configured group claim (a URL name) and role claim are parents; the entity store maps a group to a role', async () => {
    const v = await view(['permit(principal in THVRole::"developer", action == Action::"call_tool", resource == Tool::"deploy");', 'permit(principal in THVGroup::"ops", action == Action::"call_tool", resource == Tool::"weather");'], {
      groupClaimName: 'https://example.com/groups',
      roleClaimName: 'realm_access.roles',
      entitiesJson: JSON.stringify([{ uid: { type: 'THVGroup', id: 'engineering' }, attrs: {}, parents: [{ type: 'THVRole', id: 'developer' }] }]),
    });
    assert.deepEqual(await seen(v, user('a', { 'https://example.com/groups': ['engineering'] }), TOOLS), ['deploy']);
    assert.deepEqual(await seen(v, user('b', { realm_access: { roles: ['ops'] } }), TOOLS), ['weather'], 'the role claim, a dot path');
    assert.deepEqual(await seen(v, user('c', { 'https://example.com/groups': ['marketing'] }), TOOLS), []);
    assert.deepEqual(await seen(v, user('d', { groups: ['engineering'] }), TOOLS), ['deploy'], 'the configured claim absent: the well-known groups claim is read, as in ToolHive');
    assert.deepEqual(await seen(v, user('e', { 'https://example.com/groups': [], groups: ['engineering'] }), TOOLS), [], 'the configured claim present, even empty: no fallback');
  });

  it('the well-known group claims are tried when the configured one is absent; a custom group entity type', async () => {
    const v = await view(['permit(principal in Team::"eng", action, resource);'], { groupEntityType: 'Team' });
    assert.deepEqual(await seen(v, user('a', { groups: ['eng'] }), [tool('weather')]), ['weather']);
    assert.deepEqual(await seen(v, user('b', { 'cognito:groups': ['eng'] }), [tool('weather')]), ['weather']);
    assert.deepEqual(await seen(v, user('c', { groups: ['ops'] }), [tool('weather')]), []);
  });
});

describe('what Cedar sees of an item', () => {
  it('the name the client sees (prefixed or renamed), not the backend\'s, as ToolHive\'s vMCP decides on the advertised name', async () => {
    const v = await view(['permit(principal, action == Action::"call_tool", resource == Tool::"demo_weather");']);
    assert.deepEqual(await seen(v, user('a'), [tool('demo_weather', { original: 'weather' }), tool('docs_weather', { original: 'weather' })]), ['demo_weather']);
  });

  it('a tool\'s annotations as its backend listed them; the server name is the MCP parent', async () => {
    const v = await view(['permit(principal, action == Action::"call_tool", resource in MCP::"vmcp") when { resource has readOnlyHint && resource.readOnlyHint };']);
    const readOnly = tool('search', { item: { name: 'search', annotations: { readOnlyHint: true, title: 'x' } } });
    const writes = tool('write', { item: { name: 'write', annotations: { readOnlyHint: false } } });
    assert.deepEqual(await seen(v, user('a'), [readOnly, writes, tool('plain')]), ['search']);
  });

  it('a resource template by its URI template; a read of an expanded URI decided on that URI', async () => {
    const v = await view([
      'permit(principal, action == Action::"read_resource", resource == Resource::"file:///docs/{name}");',
      'permit(principal, action == Action::"read_resource", resource == Resource::"file:///docs/readme.md");',
    ]);
    const template = item('resourceTemplates', 'file:///docs/{name}');
    assert.deepEqual(await seen(v, user('a'), [template, item('resourceTemplates', 'file:///etc/{name}')]), ['file:///docs/{name}']);
    // The gateway gives a read of a template's expansion as a resource named by the URI read.
    const read = (uri: string) => admitted(v, user('a'), item('resources', uri), request('resources/read', { uri }));
    assert.equal(await read('file:///docs/readme.md'), 'through');
    assert.equal(await read('file:///docs/secret.md'), 'read denied by authorization policy');
    assert.equal(await admitted(v, user('a'), item('resources', 'file:///docs/x'), request('completion/complete', { ref: { type: 'ref/resource', uri: 'file:///docs/x' }, argument: { name: 'n', value: '' } })), 'read denied by authorization policy');
    assert.equal(await admitted(v, user('a'), template, request('completion/complete', { ref: { type: 'ref/resource', uri: 'file:///docs/{name}' }, argument: { name: 'name', value: 'r' } })), 'through');
    assert.equal(await admitted(v, user('a'), item('resources', 'file:///docs/readme.md'), request('resources/read', { uri: 'file:///docs/readme.md' })), 'through', 'a listed resource: its list decision holds');
  });
});

describe('admit', () => {
  it('without a policy reading arguments a visible item\'s call goes through at once: no decision is made', async () => {
    const authorizer = createCedarAuthorizer(settingsOf(authz(['permit(principal, action, resource);']), 'vmcp'));
    const v = cedarView(authorizer, { anonymous: false });
    assert.equal(await admitted(v, user('a'), tool('weather'), call('weather', { x: 1 })), 'through');
    assert.equal(await admitted(v, user('a'), item('prompts', 'p'), request('prompts/get', { name: 'p', arguments: { x: '1' } })), 'through');
    assert.equal(authorizer.cachedDecisions, 0);
  });

  it('a policy reading arguments of another tool leaves this one\'s calls alone', async () => {
    const authorizer = createCedarAuthorizer(settingsOf(authz(['permit(principal, action, resource);', 'forbid(principal, action, resource == Tool::"calc") when { context has arg_x };']), 'vmcp'));
    const v = cedarView(authorizer, { anonymous: false });
    assert.equal(await admitted(v, user('a'), tool('weather'), call('weather', { x: 1 })), 'through');
    assert.equal(authorizer.cachedDecisions, 0);
    assert.equal(await admitted(v, user('a'), tool('calc'), call('calc', { x: 1 })), 'call denied by authorization policy');
  });

  it('prompts/get is decided with its arguments (ToolHive\'s middleware passes them)', async () => {
    const v = await view(['permit(principal, action == Action::"get_prompt", resource == Prompt::"summary") when { context.arg_style == "short" };']);
    assert.deepEqual(await seen(v, user('a'), [item('prompts', 'summary')]), ['summary']);
    assert.equal(await admitted(v, user('a'), item('prompts', 'summary'), request('prompts/get', { name: 'summary', arguments: { style: 'short' } })), 'through');
    assert.equal(await admitted(v, user('a'), item('prompts', 'summary'), request('prompts/get', { name: 'summary', arguments: { style: 'long' } })), 'prompt denied by authorization policy');
  });

  it('a denial is a JSON-RPC error: ToolHive\'s code 403 and message, inside an HTTP 200', async () => {
    const v = await view(['permit(principal, action, resource) when { context.arg_ok == true };']);
    const denied = await v.admit!(user('a'), tool('t'), call('t', { ok: false }));
    assert.ok(denied instanceof GatewayError);
    assert.deepEqual({ code: denied.code, status: denied.status, rpcCode: denied.rpcCode }, { code: 'forbidden', status: 200, rpcCode: 403 });
    assert.deepEqual(rpcErrorResponse(denied, 7), { jsonrpc: '2.0', id: 7, error: { code: 403, message: 'call denied by authorization policy', data: { error: 'forbidden' } } });
  });

  it('hostile arguments do not throw: a list, a string, deep nesting, a lone surrogate', async () => {
    const v = await view(['permit(principal, action, resource) when { context has arg_a && context.arg_a == "x" };']);
    let deep: unknown = 'x';
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    for (const args of [[1, 2], 'string', { a: deep }, { a: '\ud800' }, null]) {
      const req = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: args } } as JsonRpcRequest;
      assert.equal(await admitted(v, user('a'), tool('t'), req), 'call denied by authorization policy');
    }
  });
});

describe('callers', () => {
  it('anonymous incoming auth: ToolHive\'s anonymous principal, Client::"anonymous"', async () => {
    const v = await view(['permit(principal == Client::"anonymous", action == Action::"call_tool", resource == Tool::"weather") when { principal.claim_iss == "toolhive-local" };'], {}, true);
    assert.deepEqual(await seen(v, ctx(null), TOOLS), ['weather']);
    assert.equal(v.key(ctx(null)), v.key(ctx(null)));
  });

  it('no principal without anonymous auth: nothing is seen, a call is denied', async () => {
    const v = await view(['permit(principal, action, resource);']);
    assert.deepEqual(await seen(v, ctx(null), TOOLS), []);
    assert.equal(await admitted(v, ctx(null), tool('weather'), call('weather')), 'call denied by authorization policy');
  });

  it('the key: what the policies read of the caller, so a refreshed token keeps it and another role changes it', async () => {
    const v = await view(['permit(principal, action, resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };']);
    const key = v.key(user('alice', { roles: ['admin'], jti: 'a' }));
    assert.equal(typeof key, 'string');
    assert.equal(v.key(user('alice', { roles: ['admin'], jti: 'b', exp: 2_000_000_000 })), key);
    assert.equal(v.key(user('bob', { roles: ['admin'] })), key, 'no policy compares the principal: bob sees what alice sees');
    assert.notEqual(v.key(user('alice', { roles: ['dev'] })), key);
    assert.notEqual(v.key(ctx({ roles: ['admin'] })), key, 'without a subject everything is denied');
    const bySubject = await view(['permit(principal == Client::"alice", action, resource);']);
    assert.notEqual(bySubject.key(user('alice')), bySubject.key(user('bob')));
  });

  it('a config Cedar refuses fails the plugin\'s start, naming where the policies are', async () => {
    await assert.rejects(view(['permit(principal, acton, resource);']), /test: invalid Cedar authorization config: policies\[0\]: line 1 col 19/);
  });
});
