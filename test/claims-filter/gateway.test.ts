/**
 * The claims filter through a running gateway, as `vmcp serve` composes it (VmcpBuiltins: OIDC
 * incoming auth, then the filter): tokens with string and array claims against a backend with
 * claims (its annotation) and items with claims (aggregation.tools[].authzClaims). Paged lists
 * are the caller's own and full; a hidden tool, prompt or resource is answered as one that does
 * not exist, in a legacy session and to a modern (2026-07-28) request; a one-backend group is
 * filtered under the backend's own names; a reload that changes the claims changes what a caller
 * sees, and tells list_changed to the live sessions whose lists changed, only them; with anonymous incoming auth nothing is filtered and the start-up warning names where
 * claims are configured.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { connectClient, type ConnectedClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway, vmcpYaml, writeConfig, type TestBackend } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { captureLog } from '../store/helpers/log.ts';

const RESOURCE = 'http://127.0.0.1:4483/mcp';
const CLAIMS = 'toolhive.stacklok.dev/authz-claims';
/** beta's items: add for admins, greet for writers, its static resource for admins. */
const BETA_ITEMS = 'authzClaims: {tools: {add: {role: admin}}, prompts: {greet: {role: writer}}, resources: {"fixture://beta/static": {role: admin}}}';

type Token = Record<string, unknown>;
const DATA: Token = { sub: 'dana', team: 'data' };
const PLATFORM_ADMIN: Token = { sub: 'pat', team: ['sre', 'platform'], role: ['writer', 'admin'] };
const PLATFORM_NUMERIC: Token = { sub: 'nora', team: 'platform', role: 1 };

describe('claims filter through the gateway (OIDC, aggregated)', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;
  let builtins: VmcpBuiltins;
  let backends: TestBackend[];

  const bearer = async (claims: Token): Promise<string> => `Bearer ${await issuer.mint(issuer.claims(RESOURCE, claims))}`;
  const incomingAuth = () => inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE });

  /** Every page of a list through the SDK client: the page sizes and the names (URIs for resources). */
  async function pages(claims: Token, list: 'tools' | 'prompts' | 'resources' | 'resourceTemplates'): Promise<{ sizes: number[]; names: string[] }> {
    const c = await connectClient(gateway.url, { headers: { authorization: await bearer(claims) }, waitForStandaloneStream: false });
    try {
      const sizes: number[] = [];
      const names: string[] = [];
      let cursor: string | undefined;
      do {
        const params = cursor === undefined ? {} : { cursor };
        const page =
          list === 'tools'
            ? await c.client.listTools(params).then((p) => ({ items: p.tools.map((t) => t.name), next: p.nextCursor }))
            : list === 'prompts'
              ? await c.client.listPrompts(params).then((p) => ({ items: p.prompts.map((t) => t.name), next: p.nextCursor }))
              : list === 'resources'
                ? await c.client.listResources(params).then((p) => ({ items: p.resources.map((t) => t.uri), next: p.nextCursor }))
                : await c.client.listResourceTemplates(params).then((p) => ({ items: p.resourceTemplates.map((t) => t.uriTemplate), next: p.nextCursor }));
        sizes.push(page.items.length);
        names.push(...page.items);
        cursor = page.next;
      } while (cursor !== undefined);
      return { sizes, names };
    } finally {
      await c.close();
    }
  }

  /** Every tool (or prompt) name of a live session's list, page after page. */
  async function all(c: ConnectedClient, list: 'tools' | 'prompts'): Promise<string[]> {
    const names: string[] = [];
    let cursor: string | undefined;
    do {
      const params = cursor === undefined ? {} : { cursor };
      const page = list === 'tools' ? await c.client.listTools(params).then((p) => ({ items: p.tools, next: p.nextCursor })) : await c.client.listPrompts(params).then((p) => ({ items: p.prompts, next: p.nextCursor }));
      names.push(...page.items.map((item) => item.name));
      cursor = page.next;
    } while (cursor !== undefined);
    return names;
  }

  /** A raw request in a fresh legacy session of the caller: its status and body text. */
  async function answer(claims: Token, method: string, params: Record<string, unknown>): Promise<{ status: number; text: string }> {
    const authorization = await bearer(claims);
    const c = await connectClient(gateway.url, { headers: { authorization }, waitForStandaloneStream: false });
    try {
      const res = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), {
        authorization,
        'mcp-session-id': c.transport.sessionId!,
        'mcp-protocol-version': '2025-11-25',
      });
      return { status: res.status, text: res.text };
    } finally {
      await c.close();
    }
  }

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    alpha = await startSdkServer({ name: 'alpha', tools: ['echo', 'add'] });
    beta = await startSdkServer({ name: 'beta', tools: ['echo', 'add'] });
    backends = [
      { name: 'alpha', url: alpha.url, annotations: { [CLAIMS]: '{"team": "platform"}' } },
      { name: 'beta', url: beta.url },
    ];
    builtins = new VmcpBuiltins();
    gateway = await startTestGateway({ backends, incomingAuth: incomingAuth(), config: `aggregation: {pageSize: 2, tools: [{workload: beta, ${BETA_ITEMS}}]}`, builtins });
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
    await beta.close();
    await issuer.close();
  });

  it('lists are the caller\'s own, filtered before paging: full pages, the exact set', async () => {
    assert.deepEqual(await pages(PLATFORM_ADMIN, 'tools'), { sizes: [2, 2], names: ['alpha_echo', 'alpha_add', 'beta_echo', 'beta_add'] });
    assert.deepEqual(await pages(DATA, 'tools'), { sizes: [1], names: ['beta_echo'] });
    assert.deepEqual(await pages(PLATFORM_NUMERIC, 'tools'), { sizes: [2, 1], names: ['alpha_echo', 'alpha_add', 'beta_echo'] }, 'role held as a number never matches');
    assert.deepEqual((await pages(PLATFORM_ADMIN, 'prompts')).names, ['alpha_greet', 'beta_greet']);
    assert.deepEqual((await pages(DATA, 'prompts')).names, []);
    assert.deepEqual((await pages(PLATFORM_ADMIN, 'resources')).names.sort(), ['fixture://alpha/counter', 'fixture://alpha/static', 'fixture://beta/counter', 'fixture://beta/static']);
    assert.deepEqual((await pages(DATA, 'resources')).names, ['fixture://beta/counter']);
    assert.deepEqual((await pages(DATA, 'resourceTemplates')).names, ['fixture://beta/item/{id}'], 'a template has its backend\'s claims only');
  });

  it('a hidden tool, prompt or resource is answered exactly as one that does not exist', async () => {
    const pairs: [string, Record<string, unknown>, Record<string, unknown>][] = [
      ['tools/call', { name: 'alpha_echo', arguments: { text: 'x' } }, { name: 'alpha_ekho', arguments: { text: 'x' } }],
      ['tools/call', { name: 'beta_add', arguments: { a: 1, b: 2 } }, { name: 'beta_sub', arguments: { a: 1, b: 2 } }],
      ['prompts/get', { name: 'beta_greet', arguments: { name: 'x' } }, { name: 'beta_grete', arguments: { name: 'x' } }],
      ['resources/read', { uri: 'fixture://beta/static' }, { uri: 'fixture://beta/statik' }],
      ['resources/read', { uri: 'fixture://alpha/static' }, { uri: 'fixture://alpha/statik' }],
    ];
    const subject = (p: Record<string, unknown>): string => String(p['name'] ?? p['uri']);
    for (const [method, hidden, absent] of pairs) {
      const seen = await answer(DATA, method, hidden);
      const none = await answer(DATA, method, absent);
      assert.equal(seen.status, none.status, method);
      assert.match(seen.text, /"error"/, `${method} ${subject(hidden)} is refused`);
      assert.equal(seen.text.replaceAll(subject(hidden), 'X'), none.text.replaceAll(subject(absent), 'X'), `${method} ${subject(hidden)}`);
      const allowed = await answer(PLATFORM_ADMIN, method, hidden);
      assert.doesNotMatch(allowed.text, /"error"/, `${method} ${subject(hidden)} for a caller holding its claims`);
    }
  });

  it('a modern (2026-07-28) request sees the same list and the same unknown answer', async () => {
    const authorization = await bearer(DATA);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const modern = async (method: string, params: Record<string, unknown> = {}) => {
      const name: Record<string, string> = typeof params['name'] === 'string' ? { 'mcp-name': params['name'] } : {};
      const res = await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: meta } }), {
        authorization,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': method,
        ...name,
      });
      return res.json as Record<string, unknown>;
    };
    const list = (await modern('tools/list'))['result'] as { tools: { name: string }[] };
    assert.deepEqual(list.tools.map((t) => t.name), ['beta_echo']);
    const hidden = await modern('tools/call', { name: 'beta_add', arguments: { a: 1, b: 2 } });
    const absent = await modern('tools/call', { name: 'beta_sub', arguments: { a: 1, b: 2 } });
    assert.equal(JSON.stringify(hidden).replace('beta_add', 'X'), JSON.stringify(absent).replace('beta_sub', 'X'));
  });

  it('a reload that changes the claims changes what a caller sees', async () => {
    const reloadWith = async (alphaClaims: string, items: string) => {
      const next = await loadVmcpConfig(
        await writeConfig(
          vmcpYaml({
            backends: [{ ...backends[0]!, annotations: { [CLAIMS]: alphaClaims } }, backends[1]!],
            incomingAuth: incomingAuth(),
            config: `aggregation: {pageSize: 2, tools: [{workload: beta, ${items}}]}`,
          }),
        ),
      );
      const outcome = await gateway.reload(next, builtins.for(next));
      assert.equal(outcome.status, 'applied', JSON.stringify(outcome));
      if (outcome.status === 'applied') builtins.served(next);
    };
    // Live sessions: dana's tools change; steady's tools stay (alpha now wants data, which it holds too; beta_echo admin, which it is), its prompts do not.
    const steady: Token = { sub: 'steady', team: ['platform', 'data'], role: 'admin' };
    const dana = await connectClient(gateway.url, { headers: { authorization: await bearer(DATA) } });
    const stay = await connectClient(gateway.url, { headers: { authorization: await bearer(steady) } });
    try {
      assert.deepEqual(await all(dana, 'tools'), ['beta_echo']);
      assert.deepEqual(await all(stay, 'tools'), ['alpha_echo', 'alpha_add', 'beta_echo', 'beta_add']);
      assert.deepEqual(await all(stay, 'prompts'), ['alpha_greet']);
      await reloadWith('{"team": "data"}', 'authzClaims: {tools: {echo: {role: admin}}}');
      await dana.waitForNotification('notifications/tools/list_changed', undefined, 5_000);
      assert.deepEqual(await all(dana, 'tools'), ['alpha_echo', 'alpha_add', 'beta_add']);
      await stay.waitForNotification('notifications/prompts/list_changed', undefined, 5_000);
      assert.equal(stay.notifications.filter((n) => n.method === 'notifications/tools/list_changed').length, 0, 'a caller whose tools are the same is not told');
      assert.deepEqual(await all(stay, 'prompts'), ['alpha_greet', 'beta_greet']);
      assert.deepEqual((await pages(PLATFORM_ADMIN, 'tools')).names, ['beta_echo', 'beta_add']);
    } finally {
      await dana.close();
      await stay.close();
      await reloadWith('{"team": "platform"}', BETA_ITEMS);
    }
    assert.deepEqual((await pages(DATA, 'tools')).names, ['beta_echo']);
  });
});

describe('claims filter through the gateway: one backend, and anonymous incoming auth', () => {
  let issuer: KeyIssuer;
  let solo: SdkServer;

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    solo = await startSdkServer({ name: 'solo', tools: ['echo', 'add'] });
  });
  after(async () => {
    await solo.close();
    await issuer.close();
  });

  it('a group of one with item claims keeps the backend\'s own names, filtered per caller', async () => {
    const gateway = await startTestGateway({
      backends: [{ name: 'solo', url: solo.url }],
      incomingAuth: inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE }),
      config: 'aggregation: {tools: [{workload: solo, authzClaims: {tools: {add: {role: admin}}}}]}',
    });
    try {
      const names = async (claims: Token) => {
        const c = await connectClient(gateway.url, { headers: { authorization: `Bearer ${await issuer.mint(issuer.claims(RESOURCE, claims))}` }, waitForStandaloneStream: false });
        try {
          return (await c.client.listTools()).tools.map((t) => t.name);
        } finally {
          await c.close();
        }
      };
      assert.deepEqual(await names({ sub: 'a', role: 'admin' }), ['echo', 'add']);
      assert.deepEqual(await names({ sub: 'b', role: 'viewer' }), ['echo']);
    } finally {
      await gateway.stop();
    }
  });

  it('anonymous: nothing is filtered, and one warning at start names where claims are configured', async () => {
    const captured = captureLog('info');
    const other = await startSdkServer({ name: 'other', tools: ['echo'] });
    const gateway = await startTestGateway({
      backends: [
        { name: 'solo', url: solo.url, annotations: { [CLAIMS]: '{"team": "platform"}' } },
        { name: 'other', url: other.url },
      ],
      config: 'aggregation: {tools: [{workload: other, authzClaims: {tools: {echo: {role: admin}}}}]}',
      log: captured.log,
    });
    try {
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      try {
        assert.deepEqual((await c.client.listTools()).tools.map((t) => t.name), ['solo_echo', 'solo_add', 'other_echo']);
      } finally {
        await c.close();
      }
      const warnings = captured.lines().filter((line) => line.level === 40 && String(line.msg).includes('claims configured here are not enforced'));
      assert.equal(warnings.length, 1, JSON.stringify(captured.lines().filter((line) => line.level === 40)));
      assert.deepEqual(warnings[0]!.claimsConfiguredAt, [
        'MCPServer/solo metadata.annotations["toolhive.stacklok.dev/authz-claims"]',
        'VirtualMCPServer/vmcp spec.config.aggregation.tools[workload other].authzClaims',
      ]);
    } finally {
      await gateway.stop();
      await other.close();
    }
  });
});
