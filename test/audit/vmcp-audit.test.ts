/**
 * The audit trail of the virtual MCP server (spec.config.audit), end to end with the official SDK
 * client through an aggregated gateway with OIDC, Cedar and a rate limit: one record per MCP
 * request, with the ToolHive event type and outcome of each case (a call that succeeded, one a
 * backend failed, one the policy refused, one rate-limited, a tool that does not exist, a request
 * without a token), the principal, address, backend, tool, error codes, latency, request id;
 * arguments only when configured and only under maxDataSize; no token or session id anywhere in
 * the file; hostile names (CR/LF in a tool name and in a subject) cannot start a record of their
 * own. And the trail's filters (eventTypes, excludeEventTypes), syslog over UDP from a running
 * gateway, and nothing recorded when off.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import diagnostics from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectClient, type ConnectedClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { post, startTestGateway } from '../helpers/gateway.ts';
import { inlineOidcYaml } from '../incoming-auth/helpers/gateway.ts';
import { KeyIssuer } from '../incoming-auth/helpers/key-issuer.ts';
import { RESOURCE } from '../incoming-auth/helpers/oidc-gateway.ts';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { CHANNELS } from '../../core/index.ts';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';

type Line = Record<string, unknown>;

async function callTool(client: ConnectedClient, name: string, args: Record<string, unknown> = { text: 'hi' }): Promise<unknown> {
  try {
    return await client.client.callTool({ name, arguments: args });
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
}

/** Every line of the file, each of which must be one JSON object. */
async function linesOf(file: string): Promise<{ raw: string; lines: Line[] }> {
  const raw = await readFile(file, 'utf8');
  const lines = raw.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
  return { raw, lines };
}

const POLICIES = [
  'permit(principal, action == Action::"call_tool", resource == Tool::"alpha_echo");',
  'permit(principal, action == Action::"call_tool", resource == Tool::"alpha_add");',
  'permit(principal, action == Action::"call_tool", resource == Tool::"beta_echo");',
  'permit(principal, action == Action::"list_tools", resource);',
  'permit(principal, action == Action::"get_prompt", resource);',
  'permit(principal, action == Action::"read_resource", resource);',
];

describe('audit trail: the MCP requests of an aggregated gateway', () => {
  let issuer: KeyIssuer;
  let alpha: SdkServer;
  let beta: SdkServer;
  let gateway: RunningVmcp;
  let file: string;
  const tokens: string[] = [];
  const sessions: string[] = [];
  let lines: Line[] = [];
  let raw = '';

  const bearer = async (sub: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const token = await issuer.mint(issuer.claims(RESOURCE, { sub, client_id: 'audit-client', ...extra }));
    tokens.push(token);
    return `Bearer ${token}`;
  };
  const connect = async (sub: string): Promise<ConnectedClient> => {
    const client = await connectClient(gateway.url, { headers: { authorization: await bearer(sub) } });
    if (client.transport.sessionId !== undefined) sessions.push(client.transport.sessionId);
    return client;
  };

  before(async () => {
    issuer = await KeyIssuer.start();
    await issuer.addKey('ES256');
    alpha = await startSdkServer({ name: 'alpha' });
    beta = await startSdkServer({ name: 'beta' });
    file = join(await mkdtemp(join(tmpdir(), 'gatehouse-audit-')), 'audit.log');
    const policy = `    authzConfig: {type: inline, inline: {policies: ${JSON.stringify(POLICIES)}}}`;
    gateway = await startTestGateway({
      backends: [alpha, beta].map((b) => ({ name: b.name, url: b.url })),
      config: `rateLimiting: {tools: [{name: alpha_add, shared: {maxTokens: 1, refillPeriod: 1h}}]}, audit: {enabled: true, component: vmcp-test, includeRequestData: true, maxDataSize: 64, logFile: "${file}"}`,
      incomingAuth: `${inlineOidcYaml({ issuer: issuer.url, audience: RESOURCE, resourceUrl: RESOURCE })}\n${policy}`,
    });

    const alice = await connect('alice');
    await callTool(alice, 'alpha_echo', { text: 'small' });
    await callTool(alice, 'alpha_echo', { text: 'x'.repeat(200) });
    await callTool(alice, 'alpha_add', { a: 1, b: 2 });
    await callTool(alice, 'alpha_add', { a: 1, b: 2 });
    await callTool(alice, 'beta_add', { a: 1, b: 2 });
    await callTool(alice, 'alpha_nope');
    await callTool(alice, 'alpha_echo\r\n{"type":"forged","outcome":"success"}');
    await alice.client.getPrompt({ name: 'alpha_greet', arguments: { name: 'Ada' } });
    await alice.client.readResource({ uri: 'fixture://alpha/static' });
    await alice.close();
    const hostile = await connect('mallory\r\n{"type":"forged"}\u0000');
    await callTool(hostile, 'alpha_echo');
    await beta.close();
    await callTool(hostile, 'beta_echo');
    await hostile.close();
    await post(gateway.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { 'mcp-protocol-version': '2025-06-18' });
    await gateway.stop();
    ({ raw, lines } = await linesOf(file));
  });
  after(async () => {
    await gateway.stop();
    await alpha.close();
    await issuer.close();
  });

  const calls = (tool: string): Line[] => lines.filter((l) => l.type === 'mcp_tool_call' && l.tool === tool);

  it('records an initialize per session, with the principal, client and address', () => {
    const inits = lines.filter((l) => l.type === 'mcp_initialize');
    assert.equal(inits.length, 2, JSON.stringify(lines.map((l) => l.type)));
    assert.equal(inits[0]!.outcome, 'success');
    assert.equal(inits[0]!.sub, 'alice');
    assert.equal(inits[0]!.iss, issuer.url);
    assert.equal(inits[0]!.clientId, 'audit-client');
    assert.equal(inits[0]!.clientAddress, '127.0.0.1');
    assert.equal(inits[0]!.component, 'vmcp-test');
  });

  it('a tool call that succeeded: backend, tool, status, latency, request id, session tag, arguments under maxDataSize', () => {
    const [small, large] = calls('alpha_echo');
    assert.equal(small!.outcome, 'success');
    assert.equal(small!.backend, 'alpha');
    assert.equal(small!.rpc, 'tools/call');
    assert.equal(typeof small!.ms, 'number');
    assert.match(String(small!.requestId), /\S/);
    assert.match(String(small!.session), /^[\w-]+$/);
    assert.match(String(small!.time), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(small!.arguments, { text: 'small' });
    assert.equal(large!.arguments, undefined);
    assert.ok(Number(large!.argumentsBytes) > 64);
  });

  it('records a prompts/get and a resources/read, naming the prompt and the resource', () => {
    const prompt = lines.find((l) => l.type === 'mcp_prompt_get');
    assert.equal(prompt!.prompt, 'alpha_greet');
    assert.equal(prompt!.outcome, 'success');
    assert.equal(prompt!.backend, 'alpha');
    assert.deepEqual(prompt!.arguments, { name: 'Ada' });
    const read = lines.find((l) => l.type === 'mcp_resource_read');
    assert.equal(read!.resource, 'fixture://alpha/static');
    assert.equal(read!.outcome, 'success');
    assert.equal(read!.backend, 'alpha');
  });

  it('a rate-limited call is denied (rate_limited, 429); the first was a success', () => {
    const [first, second] = calls('alpha_add');
    assert.equal(first!.outcome, 'success');
    assert.equal(second!.outcome, 'denied');
    assert.equal(second!.errorCode, 'rate_limited');
    assert.equal(second!.rpcErrorCode, 429);
  });

  it('a call the policy refuses is denied; a tool that does not exist is a failure', () => {
    const [refused] = calls('beta_add');
    const [unknown] = calls('alpha_nope');
    assert.ok(refused !== undefined && unknown !== undefined, JSON.stringify(lines));
    // The caller heard "Unknown tool" for both (what it may not call does not exist, for it); the audit knows which was which.
    assert.equal(refused.outcome, 'denied', JSON.stringify(refused));
    assert.equal(refused.errorCode, 'forbidden');
    assert.equal(unknown.outcome, 'failure', JSON.stringify(unknown));
    assert.equal(unknown.errorCode, 'invalid_params');
    assert.equal(refused.rpcErrorCode, unknown.rpcErrorCode);
  });

  it('a call its backend failed is an error, naming the backend', () => {
    const [failed] = calls('beta_echo');
    assert.equal(failed!.outcome, 'error', JSON.stringify(failed));
    assert.match(String(failed!.errorCode), /^backend_/);
    assert.equal(failed!.backend, 'beta');
  });

  it('a request without a token is denied (401)', () => {
    const refused = lines.filter((l) => l.status === 401);
    assert.equal(refused.length, 1, JSON.stringify(refused));
    assert.equal(refused[0]!.outcome, 'denied');
    assert.equal(refused[0]!.sub, undefined);
  });

  it('CR/LF in a tool name or a subject stays inside its record', () => {
    assert.equal(lines.some((l) => l.type === 'forged'), false);
    assert.equal(calls('alpha_echo\r\n{"type":"forged","outcome":"success"}').length, 1);
    const mallory = lines.filter((l) => l.sub === 'mallory\r\n{"type":"forged"}\u0000');
    assert.ok(mallory.length >= 2);
    // One line per record: the file's newlines are the records' ends only.
    assert.equal(raw.split('\n').length - 1, lines.length);
  });

  it('no token and no session id appears anywhere in the audit file', () => {
    assert.ok(tokens.length >= 2 && sessions.length >= 2);
    for (const secret of [...tokens, ...sessions]) assert.equal(raw.includes(secret), false, 'a credential in the audit file');
    // Nor a part of a token (its signature).
    for (const token of tokens) assert.equal(raw.includes(token.split('.')[2]!), false);
  });
});

describe('audit trail: filters, and off', () => {
  let backend: SdkServer;
  before(async () => {
    backend = await startSdkServer({ name: 'alpha' });
  });
  after(async () => {
    await backend.close();
  });

  async function recorded(audit: string): Promise<Line[]> {
    const file = join(await mkdtemp(join(tmpdir(), 'gatehouse-audit-')), 'audit.log');
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], config: audit.replace('FILE', file) });
    const client = await connectClient(gateway.url);
    await client.client.listTools();
    await callTool(client, 'echo');
    await client.close();
    await gateway.stop();
    return (await linesOf(file).catch(() => ({ lines: [] as Line[] }))).lines;
  }

  it('eventTypes keeps only those types, excludeEventTypes drops its own', async () => {
    const only = await recorded('audit: {enabled: true, logFile: "FILE", eventTypes: [mcp_tool_call, mcp_tools_list], excludeEventTypes: [mcp_tools_list]}');
    assert.deepEqual([...new Set(only.map((l) => l.type))], ['mcp_tool_call']);
    assert.equal(only[0]!.outcome, 'success');
    assert.equal(only[0]!.arguments, undefined, 'arguments only with includeRequestData');
  });

  it('syslog: each record a datagram to a UDP listener on loopback', async () => {
    const listener = createSocket('udp4');
    await new Promise<void>((resolve) => listener.bind(0, '127.0.0.1', resolve));
    const got: string[] = [];
    listener.on('message', (data) => got.push(data.toString()));
    const port = (listener.address() as AddressInfo).port;
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], config: `audit: {enabled: true, component: vmcp-syslog, syslog: {address: "udp://127.0.0.1:${port}", facility: authpriv}}` });
    const client = await connectClient(gateway.url);
    await callTool(client, 'echo\r\nforged');
    await client.close();
    for (let i = 0; i < 100 && !got.some((m) => m.includes('mcp_tool_call')); i++) await new Promise((r) => setTimeout(r, 10));
    await gateway.stop();
    listener.close();
    const call = got.find((m) => / mcp_tool_call - /.test(m));
    assert.ok(call !== undefined, got.join('\n'));
    assert.match(call, /^<8[56]>1 \S+ \S+ vmcp-syslog \d+ mcp_tool_call - \{/);
    assert.doesNotMatch(call, /[\r\n\0]/);
    const record = JSON.parse(call.slice(call.indexOf(' - ') + 3)) as Line;
    assert.equal(record.tool, 'echo\r\nforged');
    assert.ok(got.some((m) => / mcp_initialize - /.test(m)));
  });

  it('a record names its request\'s trace when tracing is on', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const lines = await recorded(`telemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: "1"}, audit: {enabled: true, logFile: "FILE", eventTypes: [mcp_tool_call]}`);
      assert.equal(lines.length, 1);
      assert.match(String(lines[0]!.traceId), /^[0-9a-f]{32}$/);
      assert.ok(receiver.spans.some((span) => span.traceId === lines[0]!.traceId), 'the trace the record names was exported');
    } finally {
      await receiver.close();
    }
  });

  it('a log file that cannot be opened stops the start, naming it', async () => {
    await assert.rejects(
      startTestGateway({ backends: [{ name: 'alpha', url: backend.url }], config: 'audit: {enabled: true, logFile: "/proc/gatehouse-audit/audit.log"}' }),
      /audit\.logFile: cannot open \/proc\/gatehouse-audit\/audit\.log for the audit trail/,
    );
  });

  it('enabled: false writes nothing, and nothing subscribes to the operations\' channels', async () => {
    assert.deepEqual(await recorded('audit: {enabled: false, logFile: "FILE"}'), []);
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: backend.url }] });
    try {
      assert.equal(diagnostics.channel(CHANNELS.authEvent).hasSubscribers, false);
      assert.equal(diagnostics.channel(CHANNELS.registryChange).hasSubscribers, false);
    } finally {
      await gateway.stop();
    }
  });
});
