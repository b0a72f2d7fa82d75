/**
 * Cedar policies (`spec.incomingAuth.authzConfig`) through a running gateway: OIDC tokens from a
 * test issuer, real SDK backends, the official SDK client. Per caller: the lists (a group claim,
 * a role claim, an argument-conditional permit), a hidden tool answered exactly as a tool that
 * does not exist, a call refused by its arguments with ToolHive's JSON-RPC error (code 403)
 * inside HTTP 200 before any backend sees it, a read of a template's expansion decided on its
 * URI; one backend (served under its own names); anonymous callers as Client::"anonymous"; and
 * `gatehouse vmcp validate` putting a policy's syntax error at its line and column.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { connectClient, textOf } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { runCli } from '../helpers/cli.ts';
import { post, startTestGateway, vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';

/** The authzConfig block under incomingAuth (indented for `spec:`). */
function authzYaml(policies: string[], more: string[] = []): string {
  return ['    authzConfig:', '      type: inline', '      inline:', '        policies:', ...policies.map((p) => `          - ${JSON.stringify(p)}`), ...more.map((line) => `      ${line}`)].join('\n');
}

const POLICIES = [
  // Everyone: alpha's echo.
  'permit(principal, action == Action::"call_tool", resource == Tool::"alpha_echo");',
  // The eng team (group claim `teams`): beta's add.
  'permit(principal in THVGroup::"eng", action == Action::"call_tool", resource == Tool::"beta_add");',
  // Everyone, with an argument: beta's echo says hello only.
  'permit(principal, action == Action::"call_tool", resource == Tool::"beta_echo") when { resource.arg_text == "hello" };',
  // Admins (role claim): alpha's prompt.
  'permit(principal, action == Action::"get_prompt", resource == Prompt::"alpha_greet") when { principal has claim_roles && principal.claim_roles.contains("admin") };',
  // Everyone: alpha's static resource, its item template, and item 1 only.
  'permit(principal, action == Action::"read_resource", resource) when { resource == Resource::"fixture://alpha/static" || resource == Resource::"fixture://alpha/item/{id}" || resource == Resource::"fixture://alpha/item/1" };',
];

/** A tools/call in the session of `token` (a raw POST): the status and the JSON-RPC answer. */
async function rawCall(url: string, token: string, sessionId: string, params: Record<string, unknown>, method = 'tools/call'): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), { authorization: `Bearer ${token}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' });
  const text = res.text.startsWith('event:') || res.text.startsWith('data:') || res.text.startsWith('id:') ? (/^data: (.*)$/m.exec(res.text)?.[1] ?? '') : res.text;
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

describe('cedar-authz through a running gateway (OIDC, aggregated)', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;
  const tokens: Record<string, string> = {};

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    const now = Math.floor(Date.now() / 1000);
    const mint = (sub: string, claims: Record<string, unknown>) => issuer.mint({ iss: issuer.url, aud: RESOURCE, sub, iat: now, exp: now + 600, ...claims });
    tokens.alice = await mint('alice', { teams: ['eng'], roles: ['admin'] });
    tokens.bob = await mint('bob', {});
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo', 'add'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo', 'add'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'alpha', url: alpha.url },
        { name: 'beta', url: beta.url },
      ],
      incomingAuth: `${inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE })}\n${authzYaml(POLICIES, ['groupClaimName: teams'])}`,
    });
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
    await beta.close();
    await issuer.close();
  });

  const client = (user: string) => connectClient(gateway.url, { headers: { authorization: `Bearer ${tokens[user]}` } });

  it('each caller lists what the policies let it use: the group claim, the role claim, an argument-conditional tool', async () => {
    const alice = await client('alice');
    const bob = await client('bob');
    try {
      assert.deepEqual((await alice.client.listTools()).tools.map((t) => t.name).sort(), ['alpha_echo', 'beta_add', 'beta_echo']);
      assert.deepEqual((await bob.client.listTools()).tools.map((t) => t.name).sort(), ['alpha_echo', 'beta_echo']);
      assert.deepEqual((await alice.client.listPrompts()).prompts.map((p) => p.name), ['alpha_greet']);
      assert.deepEqual((await bob.client.listPrompts()).prompts.map((p) => p.name), []);
      assert.deepEqual((await bob.client.listResources()).resources.map((r) => r.uri), ['fixture://alpha/static']);
      assert.deepEqual((await bob.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate), ['fixture://alpha/item/{id}']);
    } finally {
      await alice.close();
      await bob.close();
    }
  });

  it('a tool the caller does not see is answered as one that does not exist, byte for byte', async () => {
    const bob = await client('bob');
    try {
      const sessionId = bob.transport.sessionId!;
      const hidden = await rawCall(gateway.url, tokens.bob!, sessionId, { name: 'beta_add', arguments: { a: 1, b: 2 } });
      const absent = await rawCall(gateway.url, tokens.bob!, sessionId, { name: 'beta_nope', arguments: { a: 1, b: 2 } });
      assert.equal(hidden.status, absent.status);
      assert.equal(hidden.text.replaceAll('beta_add', 'X'), absent.text.replaceAll('beta_nope', 'X'));
      assert.equal(beta.received.filter((r) => r.text.includes('"add"')).length, 0, 'beta never asked');
    } finally {
      await bob.close();
    }
  });

  it('a call refused by its arguments: ToolHive\'s JSON-RPC error 403 in HTTP 200, before the backend; the session goes on', async () => {
    const bob = await client('bob');
    try {
      const ok = await bob.client.callTool({ name: 'beta_echo', arguments: { text: 'hello' } });
      assert.equal(textOf(ok), 'beta: hello');
      const refused = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { name: 'beta_echo', arguments: { text: 'secret' } });
      assert.equal(refused.status, 200);
      assert.deepEqual(refused.body, { jsonrpc: '2.0', id: 7, error: { code: 403, message: 'call denied by authorization policy', data: { error: 'forbidden' } } });
      assert.equal(beta.received.filter((r) => r.text.includes('secret')).length, 0, 'the backend never saw it');
      await assert.rejects(bob.client.callTool({ name: 'beta_echo', arguments: { text: 'bye' } }), (err: unknown) => err instanceof McpError && err.code === 403);
      assert.equal(textOf(await bob.client.callTool({ name: 'alpha_echo', arguments: { text: 'still here' } })), 'alpha: still here');
    } finally {
      await bob.close();
    }
  });

  it('a read of a template\'s expansion is decided on the URI read (a denied one does not exist); a prompt by the role claim', async () => {
    const alice = await client('alice');
    const bob = await client('bob');
    try {
      const one = await bob.client.readResource({ uri: 'fixture://alpha/item/1' });
      assert.match(JSON.stringify(one.contents), /item\/1/);
      const denied = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { uri: 'fixture://alpha/item/2' }, 'resources/read');
      const absent = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { uri: 'nowhere://x' }, 'resources/read');
      assert.equal(denied.status, absent.status);
      assert.equal(denied.text.replace('fixture://alpha/item/2', 'X'), absent.text.replace('nowhere://x', 'X'));
      const greeting = await alice.client.getPrompt({ name: 'alpha_greet', arguments: { name: 'alice' } });
      assert.ok(greeting.messages.length > 0);
      await assert.rejects(bob.client.getPrompt({ name: 'alpha_greet', arguments: { name: 'bob' } }), (err: unknown) => err instanceof McpError && err.code !== 403, 'hidden from bob: unknown, not denied');
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});

describe('the claims filter and Cedar together: claims first, then the policies', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;
  const tokens: Record<string, string> = {};

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    const now = Math.floor(Date.now() / 1000);
    const mint = (sub: string, claims: Record<string, unknown>) => issuer.mint({ iss: issuer.url, aud: RESOURCE, sub, iat: now, exp: now + 600, ...claims });
    tokens.alice = await mint('alice', { teams: ['eng'], dept: 'a' });
    tokens.bob = await mint('bob', { teams: ['eng'], dept: 'b' });
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo', 'add'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo', 'add'] });
    gateway = await startTestGateway({
      backends: [
        { name: 'alpha', url: alpha.url },
        // Only dept a holds beta's claims: for bob, beta does not exist, whatever the policies permit.
        { name: 'beta', url: beta.url, annotations: { 'toolhive.stacklok.dev/authz-claims': '{"dept":"a"}' } },
      ],
      incomingAuth: `${inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE })}\n${authzYaml(
        [
          'permit(principal in THVGroup::"eng", action == Action::"call_tool", resource);',
          'forbid(principal, action == Action::"call_tool", resource == Tool::"alpha_add");',
        ],
        ['groupClaimName: teams'],
      )}`,
    });
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
    await beta.close();
    await issuer.close();
  });

  it('an item is seen when the claims hold and the policies permit it; each hides it as one that does not exist', async () => {
    const alice = await connectClient(gateway.url, { headers: { authorization: `Bearer ${tokens.alice}` } });
    const bob = await connectClient(gateway.url, { headers: { authorization: `Bearer ${tokens.bob}` } });
    try {
      assert.deepEqual((await alice.client.listTools()).tools.map((t) => t.name).sort(), ['alpha_echo', 'beta_add', 'beta_echo']);
      assert.deepEqual((await bob.client.listTools()).tools.map((t) => t.name).sort(), ['alpha_echo']);
      const byClaims = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { name: 'beta_echo', arguments: { text: 'x' } });
      const byPolicy = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { name: 'alpha_add', arguments: { a: 1, b: 2 } });
      const absent = await rawCall(gateway.url, tokens.bob!, bob.transport.sessionId!, { name: 'alpha_nope', arguments: { a: 1, b: 2 } });
      assert.equal(byClaims.text.replaceAll('beta_echo', 'X'), absent.text.replaceAll('alpha_nope', 'X'));
      assert.equal(byPolicy.text.replaceAll('alpha_add', 'X'), absent.text.replaceAll('alpha_nope', 'X'));
      assert.match(textOf(await alice.client.callTool({ name: 'beta_echo', arguments: { text: 'hi' } })), /hi/);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});

describe('cedar-authz: one backend, anonymous callers', () => {
  let backend: SdkServer;
  let gateway: RunningVmcp;
  const ECHO = 'permit(principal == Client::"anonymous", action == Action::"call_tool", resource == Tool::"echo") when { principal.claim_iss == "toolhive-local" };';
  const anonymous = (policies: string[]) => `  incomingAuth:\n    type: anonymous\n${authzYaml(policies)}`;

  before(async () => {
    backend = await startSdkServer({ name: 'solo', tools: ['echo', 'add'] });
    gateway = await startTestGateway({ backends: [{ name: 'solo', url: backend.url }], incomingAuth: anonymous([ECHO]) });
  });
  after(async () => {
    await gateway.stop();
    await backend.close();
  });

  it('a group of one is served under the backend\'s own names; an anonymous caller is ToolHive\'s Client::"anonymous"', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name), ['echo']);
      assert.equal(textOf(await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } })), 'solo: hi');
      await assert.rejects(c.client.callTool({ name: 'add', arguments: { a: 1, b: 2 } }), McpError);
    } finally {
      await c.close();
    }
  });

  it('policies changed by a reload: a live session is told its tools changed, and may call the new one', async () => {
    const c = await connectClient(gateway.url);
    try {
      assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name), ['echo']);
      const loaded = await loadVmcpConfig(await writeConfig(vmcpYaml({ backends: [{ name: 'solo', url: backend.url }], incomingAuth: anonymous([ECHO, 'permit(principal, action == Action::"call_tool", resource == Tool::"add");']) })));
      assert.equal((await gateway.reload(loaded, vmcpBuiltins(loaded))).status, 'applied');
      await c.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name).sort(), ['add', 'echo']);
      assert.match(textOf(await c.client.callTool({ name: 'add', arguments: { a: 1, b: 2 } })), /3/);
    } finally {
      await c.close();
    }
  });
});

describe('gatehouse vmcp validate', () => {
  const yaml = (incomingAuth: string[]) => vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9100/mcp' }], incomingAuth: ['  incomingAuth:', '    type: anonymous', ...incomingAuth].join('\n') });
  /** `file:line:col ` of the first occurrence of `text` in `file`'s content. */
  const at = (file: string, content: string, text: string): string => {
    const lines = content.split('\n');
    const line = lines.findIndex((l) => l.includes(text));
    return `${file}:${line + 1}:${lines[line]!.indexOf(text) + 1} `;
  };

  it('puts a policy\'s syntax error at its line and column: inline in a block scalar, and in a policy file', async () => {
    const content = yaml(['    authzConfig:', '      type: inline', '      inline:', '        policies:', '          - |', '            permit(', '              principal, acton, resource', '            );']);
    const file = await writeConfig(content);
    const inline = await runCli(['vmcp', 'validate', '--config', file]);
    assert.equal(inline.code, 2);
    assert.equal(inline.stdout + inline.stderr, `${at(file, content, 'acton')}VirtualMCPServer/vmcp spec.incomingAuth.authzConfig.inline.policies[0]: found an invalid variable in the policy scope: acton (policy scopes must contain a \`principal\`, \`action\`, and \`resource\` element in that order)\n`);

    const policies = JSON.stringify({ version: '1.0', type: 'cedarv1', cedar: { policies: ['permit(principal, action == Action::"call_tool", resource == Tool::"weather");', 'permit(principal, action == Action::"get_promt", resource);'] } }, null, 2);
    const policyFile = join(dirname(file), 'authz.json');
    await writeFile(policyFile, policies);
    await writeFile(file, yaml(['    authzConfig: {type: file, file: {path: authz.json}}']));
    const fromFile = await runCli(['vmcp', 'validate', '--config', file]);
    assert.equal(fromFile.code, 2, fromFile.stdout + fromFile.stderr);
    assert.match(fromFile.stdout + fromFile.stderr, new RegExp(`^${at(policyFile, policies, 'Action::\\"get_promt').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}cedar\\.policies\\[1\\]: unrecognized action \`Action::"get_promt"\` \\(did you mean \`Action::"get_prompt"\`\\?\\)`));
  });
});
