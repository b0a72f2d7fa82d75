/**
 * examples/authz: both files validate with Cedar's checks (as `gatehouse vmcp validate` reads
 * them), and the example's policies (ToolHive's documented ones) decide as its comments say, for
 * callers built here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import type { HttpRequest, HttpResponse } from '../../core/http/types.ts';
import { createLogger } from '../../core/observe/log.ts';
import { Context, Principal } from '../../core/plugin-api/context.ts';
import type { PluginHost } from '../../core/plugin-api/plugin.ts';
import type { View, ViewItem } from '../../core/plugin-api/view.ts';
import type { ListKind } from '../../core/protocol/methods.ts';
import { GatewayError } from '../../core/base/errors.ts';
import { cedarPolicyChecks } from '../../plugins/cedar-authz/checks.ts';
import { cedarAuthz } from '../../plugins/cedar-authz/plugin.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';

const log = createLogger('silent');

function load(name: string): VmcpConfig {
  const file = join(REPO_ROOT, 'examples/authz', name);
  const result = validateVmcpText(readFileSync(file, 'utf8'), file, { authzChecks: cedarPolicyChecks });
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
  return result.config;
}

function user(sub: string, claims: Record<string, unknown> = {}): Context {
  const c = new Context({ url: '/mcp', headers: {}, rawHeaders: [] } as unknown as HttpRequest, {} as HttpResponse, { log, challenge: null }, 0);
  c.principal = new Principal(sub, { sub, iss: 'https://idp.example.com', ...claims }, 'token');
  return c;
}

const item = (kind: ListKind, name: string): ViewItem => ({ kind, backend: 'tools', name, original: name, item: { name } });

async function seen(v: View, c: Context, items: ViewItem[]): Promise<string[]> {
  const flags = await v.visible(c, items);
  return items.filter((_, i) => flags[i]).map((it) => it.name);
}

describe('examples/authz', () => {
  it('the policy-file variant validates: ToolHive\'s JSON example, read from authz.json', () => {
    const config = load('vmcp-policy-file.yaml');
    assert.equal(config.authz?.policies.length, 3);
    assert.equal(config.authz?.groupClaimName, 'groups');
  });

  it('the inline example decides as its comments say', async () => {
    const config = load('vmcp.yaml');
    const plugin = await cedarAuthz.create({ authz: config.authz!, serverName: config.name, anonymous: false }, { log } as unknown as PluginHost);
    const v = plugin.view!;
    const tools = ['weather', 'calculator', 'profile', 'forecast', 'sensitive_data', 'deploy', 'admin_only'].map((name) => item('tools', name));
    assert.deepEqual(await seen(v, user('alice'), tools), ['weather', 'calculator', 'forecast'], 'calculator and forecast: some arguments allow them');
    assert.deepEqual(await seen(v, user('user123'), tools), tools.map((t) => t.name));
    assert.deepEqual(await seen(v, user('root', { roles: ['admin'] }), tools), tools.map((t) => t.name));
    assert.deepEqual(await seen(v, user('carol', { name: 'John Doe', groups: ['engineering'] }), tools), ['weather', 'calculator', 'profile', 'forecast', 'deploy']);
    assert.deepEqual(await seen(v, user('dave', { groups: ['engineering'], suspended: true }), tools), ['weather', 'calculator', 'forecast'], 'forbid wins');
    const analyst = user('erin', { roles: ['data_analyst'], clearance_level: 2 });
    assert.deepEqual(await seen(v, analyst, tools), ['weather', 'calculator', 'forecast', 'sensitive_data']);
    const call = (name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name, arguments: args } });
    assert.equal(await v.admit!(analyst, item('tools', 'sensitive_data'), call('sensitive_data', { data_level: 1 })), undefined);
    assert.ok((await v.admit!(analyst, item('tools', 'sensitive_data'), call('sensitive_data', { data_level: 3 }))) instanceof GatewayError);
    assert.equal(await v.admit!(user('alice'), item('tools', 'calculator'), call('calculator', { operation: 'add' })), undefined);
    assert.ok((await v.admit!(user('alice'), item('tools', 'calculator'), call('calculator', { operation: 'divide' }))) instanceof GatewayError);
    assert.deepEqual(await seen(v, user('alice'), [item('prompts', 'greeting'), item('resources', 'data'), item('resources', 'file:///etc/passwd'), item('resources', 'file:///etc/shadow')]), ['greeting', 'data', 'file:///etc/passwd']);
  });
});
