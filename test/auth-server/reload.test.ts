/**
 * Reloading a gateway that runs the embedded authorization server. Its clients, codes and tokens
 * may live in the process (memory storage, keys the process made itself): a reload that leaves
 * the server's config alone keeps the running server, so a client registered and logged in
 * before goes on with its access token, refreshes it, and its backends still get its upstream
 * token; backends added by the reload serve it too. A reload that changes the server (or the
 * incomingAuth fields it is built from) is refused as a whole, naming the part, and the old
 * configuration keeps serving.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { freePort } from '../fixtures/processes.ts';
import { answerJson, startScriptedBackend, type ScriptedBackend } from '../fixtures/scripted-backend.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { ClientFlows, startYamlGateway } from './helpers/flows.ts';
import { USER } from './helpers/setup.ts';
import { startUpstreamIdp, type UpstreamIdp } from './helpers/upstream-idp.ts';

describe('reload with the embedded authorization server (memory storage, keys of its own)', () => {
  let idp: UpstreamIdp;
  let profile: ScriptedBackend;
  let extra: SdkServer;
  let gateway: RunningVmcp & { file?: string };
  let flows: ClientFlows;
  let issuer: string;
  const builtins = new VmcpBuiltins();
  /** The Authorization header each tools/call reached the profile backend with. */
  const presented: string[] = [];

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    profile = await startScriptedBackend('profile');
    profile.script = ({ req, res, id }) => {
      presented.push(String(req.headers.authorization));
      answerJson(res, id, { content: [{ type: 'text', text: 'profile ran' }] });
    };
    extra = await startSdkServer({ name: 'extra' });
    gateway = await startYamlGateway({ port, backendUrl: profile.url, idpIssuer: idp.issuer, storage: '{type: memory}', persistentKeys: false, upstreamInject: true, builtins });
    flows = new ClientFlows(issuer);
  });
  after(async () => {
    await gateway.stop();
    await profile.close();
    await extra.close();
    await idp.close();
  });

  /** The gateway's own file, rewritten by `edit`, loaded and applied as `gatehouse vmcp serve` does on SIGHUP. */
  async function reloadWith(edit: (yaml: string) => string) {
    const file = (gateway as { file: string }).file;
    const { readFile } = await import('node:fs/promises');
    await writeFile(file, edit(await readFile(file, 'utf8')));
    const next = await loadVmcpConfig(file);
    const outcome = await gateway.reload(next, builtins.for(next));
    if (outcome.status === 'applied') builtins.served(next);
    return outcome;
  }

  async function callTool(access: string, name: string): Promise<{ status: number; text: string }> {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${access}` };
    const init = await fetch(`${issuer}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    await init.arrayBuffer();
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const res = await fetch(`${issuer}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: { text: 'hi' } } }) });
    return { status: res.status, text: await res.text() };
  }

  it('a reload that adds a backend keeps the clients, logins and tokens, and the upstream token still reaches the backend', async () => {
    const clientId = await flows.register();
    const tokens = await flows.login(clientId);
    const first = await callTool(tokens.access, 'run');
    assert.equal(first.status, 200, first.text);
    assert.match(first.text, /profile ran/);
    const upstreamToken = presented.at(-1);
    assert.match(upstreamToken ?? '', /^Bearer /);

    const outcome = await reloadWith((yaml) =>
      yaml.replace(
        'kind: VirtualMCPServer',
        `kind: MCPServer\nmetadata: {name: extra}\nspec:\n  url: "${extra.url}"\n  transport: streamable-http\n  groupRef: tools\n---\napiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer`,
      ),
    );
    assert.equal(outcome.status, 'applied', JSON.stringify(outcome));

    // The access token from before (signed with keys the process made itself) is still good.
    const second = await callTool(tokens.access, 'echo_run');
    assert.equal(second.status, 200, second.text);
    assert.match(second.text, /profile ran/);
    assert.equal(presented.at(-1), upstreamToken, 'the login\'s upstream token, read through the server kept across the reload');
    const added = await callTool(tokens.access, 'extra_echo');
    assert.match(added.text, /extra: hi/);
    // The refresh token from before, and a new client's whole flow.
    const refreshed = await flows.refresh(clientId, tokens.refresh);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    const again = await flows.login(await flows.register());
    assert.equal((await callTool(again.access, 'extra_echo')).status, 200);
  });

  it('refuses a reload that changes the authorization server or what it is built from, naming it; the old one keeps serving', async () => {
    const clientId = await flows.register();
    const tokens = await flows.login(clientId);
    const yaml = (await import('node:fs/promises')).readFile((gateway as { file: string }).file, 'utf8');
    const original = await yaml;
    const changedServer = await reloadWith((text) => text.replace('    storage: {type: memory}', '    storage: {type: memory}\n    tokenLifespans: {accessTokenLifespan: 10m}'));
    assert.equal(changedServer.status, 'restart-needed', JSON.stringify(changedServer));
    assert.deepEqual(changedServer.status === 'restart-needed' ? changedServer.parts.map((p) => p.path) : [], ['VirtualMCPServer/vmcp spec.authServerConfig']);
    await writeFile((gateway as { file: string }).file, original);
    const changedScopes = await reloadWith((text) => text.replace('    type: oidc\n', '    type: oidc\n    scopes: [openid, mcp:tools]\n'));
    assert.equal(changedScopes.status, 'restart-needed', JSON.stringify(changedScopes));
    assert.deepEqual(changedScopes.status === 'restart-needed' ? changedScopes.parts.map((p) => p.path) : [], ['VirtualMCPServer/vmcp spec.incomingAuth']);
    await writeFile((gateway as { file: string }).file, original);
    assert.equal(await flows.mcpStatus(tokens.access), 200);
    const refreshed = await flows.refresh(clientId, tokens.refresh);
    assert.equal(refreshed.status, 200);
    // A refused reload left nothing behind: the same server's config with one more change
    // applies, and the server, its keys and its upstream tokens go on.
    const applied = await reloadWith((text) => text.replace('  outgoingAuth:', '  server: {maxBodySize: 2Mi}\n  outgoingAuth:'));
    assert.equal(applied.status, 'applied', JSON.stringify(applied));
    assert.equal(await flows.mcpStatus(String(refreshed.body.access_token)), 200, 'a token of the kept server, checked with its keys');
    const call = await callTool(String(refreshed.body.access_token), 'echo_run');
    assert.equal(call.status, 200, call.text);
    assert.match(call.text, /profile ran/, 'the upstream token, read through the handle the kept server fills');
  });
});
