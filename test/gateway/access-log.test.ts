/**
 * `server.accessLog: true`: one `request` line per HTTP request, which on the MCP endpoint names
 * the JSON-RPC method, the tool / prompt / resource the client asked for, the backend it went to,
 * the session's tag (never its id), the status and the latency. In transparent mode (one backend)
 * and aggregated mode (several), and nothing at all when the access log is off (the default).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway, type TestBackend } from '../helpers/gateway.ts';
import { captureLog } from '../store/helpers/log.ts';
import { sessionTag } from '../../core/mcp/aggregate/session-store.ts';

type Line = Record<string, unknown>;

/** Runs a client session (a list, a tool call, a prompt, a resource read) against a gateway and returns its access-log lines. */
async function sessionThrough(backends: TestBackend[], accessLog: boolean, names: { tool: string; prompt: string }): Promise<{ lines: Line[]; text: string; sessionId: string }> {
  const captured = captureLog('info');
  const gateway = await startTestGateway({ backends, spec: `  server: {accessLog: ${accessLog}}`, log: captured.log });
  try {
    const c = await connectClient(gateway.url);
    const sessionId = c.transport.sessionId!;
    await c.client.listTools();
    await c.client.callTool({ name: names.tool, arguments: { text: 'hi' } });
    await c.client.getPrompt({ name: names.prompt, arguments: { name: 'alice' } });
    const { resources } = await c.client.listResources();
    await c.client.readResource({ uri: resources[0]!.uri });
    await c.close();
    // The response is written before the line that records it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    return { lines: captured.lines().filter((l) => l.msg === 'request'), text: captured.text(), sessionId };
  } finally {
    await gateway.stop();
  }
}

function lineFor(lines: Line[], rpc: string): Line {
  const line = lines.find((l) => l.rpc === rpc);
  assert.ok(line !== undefined, `a line with rpc ${rpc} in ${JSON.stringify(lines, null, 1)}`);
  return line;
}

describe('the access log', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  before(async () => {
    [alpha, beta] = await Promise.all([startSdkServer({ name: 'alpha' }), startSdkServer({ name: 'beta' })]);
  });
  after(async () => {
    await Promise.all([alpha.close(), beta.close()]);
  });

  it('transparent mode: method, name, backend, session tag, status and latency', async () => {
    const { lines, text, sessionId } = await sessionThrough([{ name: 'alpha', url: alpha.url }], true, { tool: 'echo', prompt: 'greet' });
    const call = lineFor(lines, 'tools/call');
    assert.equal(call.method, 'POST');
    assert.equal(call.route, 'mcp');
    assert.equal(call.tool, 'echo');
    assert.equal(call.backend, 'alpha');
    assert.equal(call.session, sessionTag(sessionId));
    assert.equal(call.status, 200);
    assert.equal(typeof call.ms, 'number');
    assert.ok((call.ms as number) >= 0);
    assert.equal(lineFor(lines, 'prompts/get').prompt, 'greet');
    assert.match(lineFor(lines, 'resources/read').resource as string, /^\w+:\/\//);
    assert.equal(lineFor(lines, 'initialize').session, undefined, 'an initialize has no session yet');
    assert.ok(!text.includes(sessionId), 'the session id itself is never logged');
  });

  it('aggregated mode: the name the client used and the backend that owns it', async () => {
    const { lines, text, sessionId } = await sessionThrough(
      [
        { name: 'alpha', url: alpha.url },
        { name: 'beta', url: beta.url },
      ],
      true,
      { tool: 'beta_echo', prompt: 'alpha_greet' },
    );
    const call = lineFor(lines, 'tools/call');
    assert.equal(call.tool, 'beta_echo');
    assert.equal(call.backend, 'beta');
    assert.equal(call.session, sessionTag(sessionId));
    assert.equal(call.status, 200);
    const prompt = lineFor(lines, 'prompts/get');
    assert.equal(prompt.prompt, 'alpha_greet');
    assert.equal(prompt.backend, 'alpha');
    const list = lineFor(lines, 'tools/list');
    assert.equal(list.backend, undefined, 'a list goes to every backend');
    assert.ok(!text.includes(sessionId), 'the session id itself is never logged');
  });

  it('writes nothing when it is off (the default)', async () => {
    const { lines } = await sessionThrough([{ name: 'alpha', url: alpha.url }], false, { tool: 'echo', prompt: 'greet' });
    assert.deepEqual(lines, []);
  });
});
