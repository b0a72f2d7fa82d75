/**
 * Traces (spec.config.telemetry, core/observe/telemetry/): exported over OTLP/HTTP to a receiver
 * in this process. A tool call through the gateway is one SERVER span with the MCP semantic
 * conventions' attributes, a child per plugin hook, and a CLIENT span per backend call whose
 * context the real backend received (traceparent header; params._meta on 2026-07-28). A client's
 * traceparent is continued only when trusted, and a hostile one (CR/LF, oversize, malformed) is
 * ignored and never reaches a backend. And the seam itself: its subscribers see each request's
 * start and end, and each backend exchange with the request it serves.
 */
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { after, before, describe, it } from 'node:test';
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { CHANNELS, RequestRecord, scopeRequests, UpstreamRecord, type PluginSpec } from '../../core/index.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startSdk2Server, type Sdk2Server } from '../fixtures/sdk2-server.ts';
import { startTestGateway, type TestBackend } from '../helpers/gateway.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CLIENT_PARENT = `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`;
const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;

/** A plugin doing what token verification, policy and token exchange do, each in its phase. */
const phases: PluginSpec = {
  definition: {
    name: 'phases',
    create: () => ({
      name: 'phases',
      authenticate: () => undefined,
      onMessage: { methods: ['tools/call'], handle: () => undefined },
      prepareBackend: () => (_ctx, headers) => {
        headers.set('x-exchanged', 'yes');
        return undefined;
      },
    }),
  } as PluginSpec['definition'],
  config: {},
  source: 'test',
};

interface Traced {
  readonly spans: ReceivedSpan[];
}

/** Runs `drive` against a gateway exporting to a fresh receiver; returns the spans once the gateway stopped (its queue exported). */
async function traced(backends: TestBackend[], telemetry: string, drive: (url: string) => Promise<void>, plugins: PluginSpec[] = []): Promise<Traced> {
  const receiver: OtlpReceiver = await startOtlpReceiver();
  try {
    const gateway = await startTestGateway({
      backends,
      config: `telemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: "1", serviceName: gatehouse-test${telemetry}}`,
      plugins,
    });
    try {
      await drive(gateway.url);
    } finally {
      await gateway.stop();
    }
    return { spans: receiver.spans };
  } finally {
    await receiver.close();
  }
}

function only(spans: ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean, what: string): ReceivedSpan {
  const found = spans.filter(predicate);
  assert.equal(found.length, 1, `one ${what} in ${JSON.stringify(spans.map((s) => [s.name, s.kind, s.attributes['mcp.method.name']]))}`);
  return found[0]!;
}

const header = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

describe('telemetry: traces through the gateway', () => {
  let alpha: SdkServer;
  let beta: SdkServer;
  before(async () => {
    [alpha, beta] = await Promise.all([startSdkServer({ name: 'alpha' }), startSdkServer({ name: 'beta' })]);
  });
  after(async () => {
    await Promise.all([alpha.close(), beta.close()]);
  });

  it('a tool call is a SERVER span with the MCP attributes, a child per plugin phase and a CLIENT span per backend call; the backend got the trace', async () => {
    const before = beta.received.length;
    const { spans } = await traced(
      [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      '',
      async (url) => {
        const c = await connectClient(url);
        await c.client.callTool({ name: 'beta_echo', arguments: { text: 'hi' } });
        await c.close();
      },
      [phases],
    );
    const call = only(spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
    assert.equal(call.name, 'tools/call beta_echo');
    assert.equal(call.service, 'gatehouse-test');
    assert.equal(call.parentSpanId, '', 'an untrusted client starts a trace of its own');
    assert.equal(call.attributes['gen_ai.tool.name'], 'beta_echo');
    assert.equal(call.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(call.attributes['mcp.server.name'], 'beta');
    assert.equal(call.attributes['http.response.status_code'], 200);
    assert.equal(call.attributes['http.route'], 'mcp');
    assert.match(String(call.attributes['jsonrpc.request.id']), /^\d+$/);
    assert.match(String(call.attributes['mcp.session.id']), /^[\w-]{10}$/, 'the session digest, never its id');
    assert.equal(call.status, 0);
    const children = spans.filter((s) => s.parentSpanId === call.spanId);
    // The call may list the backends first (to find whose tool beta_echo is): each backend call runs prepareBackend.
    for (const phase of ['authenticate phases', 'onMessage phases', 'prepareBackend phases']) {
      const found = children.filter((s) => s.name === phase);
      assert.ok(found.length >= 1, `${phase} in ${JSON.stringify(children.map((s) => s.name))}`);
      for (const span of found) {
        assert.equal(span.kind, INTERNAL);
        assert.equal(span.traceId, call.traceId);
        assert.equal(span.attributes['gatehouse.plugin.name'], 'phases');
        assert.ok(span.startNs >= call.startNs && span.endNs <= call.endNs, `${phase} lies within the request`);
      }
    }
    const backendCall = only(children, (s) => s.kind === CLIENT && s.attributes['mcp.method.name'] === 'tools/call', 'backend call');
    assert.equal(backendCall.name, 'tools/call beta');
    assert.equal(backendCall.attributes['mcp.server.name'], 'beta');
    assert.equal(backendCall.attributes['http.response.status_code'], 200);
    const received = beta.received.slice(before).find((r) => r.rpcMethods.includes('tools/call'))!;
    assert.equal(header(received.headers['traceparent']), `00-${call.traceId}-${backendCall.spanId}-01`, 'the backend continues the trace under the call span');
    assert.equal(received.headers['tracestate'], undefined);
    assert.equal(header(received.headers['x-exchanged']), 'yes');
  });

  it('a call whose body arrives in several reads is traced as one: its backend call is a CLIENT span under it', async () => {
    // 200 KB of arguments: more than a read of the socket gives, so the body's end comes with a
    // later read than its head, outside the request's own work unless it is put back into it.
    const text = 'x'.repeat(200_000);
    const { spans } = await traced(
      [{ name: 'alpha', url: alpha.url }, { name: 'beta', url: beta.url }],
      '',
      async (url) => {
        const c = await connectClient(url);
        await c.client.callTool({ name: 'beta_echo', arguments: { text } });
        await c.close();
      },
      [phases],
    );
    const call = only(spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
    const children = spans.filter((s) => s.parentSpanId === call.spanId);
    assert.ok(children.some((s) => s.name === 'onMessage phases'), `onMessage phases in ${JSON.stringify(children.map((s) => s.name))}`);
    // A body this large is not parsed again for the span's name (meta-propagation.ts): `POST beta`.
    const backendCall = only(children, (s) => s.kind === CLIENT && s.name.endsWith(' beta') && s.attributes['mcp.method.name'] !== 'tools/list', 'backend call');
    assert.equal(backendCall.traceId, call.traceId);
  });

  it('a trusted client\'s traceparent (and tracestate) is continued; an untrusted one is not', async () => {
    const headers = { traceparent: CLIENT_PARENT, tracestate: 'vendor=abc' };
    const drive = async (url: string) => {
      const c = await connectClient(url, { headers });
      await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      await c.close();
    };
    const before = alpha.received.length;
    const trusted = await traced([{ name: 'alpha', url: alpha.url }], ', trustClientTraceContext: true', drive);
    const call = only(trusted.spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
    assert.equal(call.traceId, CLIENT_TRACE);
    assert.equal(call.parentSpanId, CLIENT_SPAN);
    assert.equal(call.attributes['mcp.server.name'], 'alpha', 'transparent mode: the one backend');
    const sent = alpha.received.slice(before).find((r) => r.rpcMethods.includes('tools/call'))!;
    assert.match(header(sent.headers['traceparent'])!, new RegExp(`^00-${CLIENT_TRACE}-[0-9a-f]{16}-01$`));
    assert.notEqual(header(sent.headers['traceparent']), CLIENT_PARENT, 'the backend\'s parent is the gateway\'s span');
    assert.equal(header(sent.headers['tracestate']), 'vendor=abc');

    const middle = alpha.received.length;
    const untrusted = await traced([{ name: 'alpha', url: alpha.url }], '', drive);
    const own = only(untrusted.spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
    assert.notEqual(own.traceId, CLIENT_TRACE);
    assert.equal(own.parentSpanId, '');
    const forwarded = alpha.received.slice(middle).find((r) => r.rpcMethods.includes('tools/call'))!;
    assert.ok(!String(forwarded.headers['traceparent']).includes(CLIENT_TRACE), 'the client\'s trace does not reach the backend');
    assert.equal(forwarded.headers['tracestate'], undefined, 'nor its tracestate (transparent mode passes the client\'s headers)');
  });

  it('hostile trace context is ignored, never propagated: malformed, oversize, CR/LF in _meta, a bad tracestate', async () => {
    const hostile: Record<string, string>[] = [
      { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01-extra`, tracestate: 'ok=1' },
      { traceparent: `00-${'0'.repeat(32)}-${CLIENT_SPAN}-01` },
      { traceparent: `ff-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
      { traceparent: `00-${CLIENT_TRACE.toUpperCase()}-${CLIENT_SPAN}-01` },
      { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` + ' '.repeat(300) + 'x' },
    ];
    const before = alpha.received.length;
    const { spans } = await traced([{ name: 'alpha', url: alpha.url }], ', trustClientTraceContext: true', async (url) => {
      for (const headers of hostile) {
        const c = await connectClient(url, { headers, waitForStandaloneStream: false });
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        await c.close();
      }
      // A valid traceparent with a tracestate over the limits: the parent is kept, the tracestate dropped.
      const c = await connectClient(url, { headers: { traceparent: CLIENT_PARENT, tracestate: Array.from({ length: 40 }, (_, i) => `k${i}=v`).join(',') }, waitForStandaloneStream: false });
      await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      // CR/LF cannot come in a header (the HTTP parser refuses it), but can in the body's _meta.
      const sessionId = c.transport.sessionId!;
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'echo', arguments: { text: 'meta' }, _meta: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01\r\nx-injected: 1`, tracestate: 'a=b\r\nx-injected: 2' } } }),
      });
      await res.text();
      await c.close();
    });
    const calls = spans.filter((s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call');
    assert.equal(calls.length, hostile.length + 2);
    const continued = calls.filter((s) => s.traceId === CLIENT_TRACE);
    assert.equal(continued.length, 1, 'only the valid traceparent (with its bad tracestate) is continued');
    for (const request of alpha.received.slice(before)) {
      const traceparent = header(request.headers['traceparent']);
      if (traceparent !== undefined) assert.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      assert.equal(request.headers['tracestate'], undefined, 'no tracestate of a client reaches the backend');
      assert.equal(request.headers['x-injected'], undefined);
      assert.ok(!String(traceparent).endsWith(CLIENT_SPAN + '-01'), 'the client\'s own span is never the backend\'s parent');
    }
  });

  it('the access log line names the request\'s trace', async () => {
    const { captureLog } = await import('../store/helpers/log.ts');
    const captured = captureLog('info');
    const receiver = await startOtlpReceiver();
    try {
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }],
        config: `telemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: 1}`,
        spec: '  server: {accessLog: true}',
        log: captured.log,
      });
      try {
        const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        await c.close();
      } finally {
        await gateway.stop();
      }
      const line = captured.lines().find((l) => l.msg === 'request' && l.rpc === 'tools/call');
      assert.ok(line !== undefined);
      const span = only(receiver.spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
      assert.equal(line.traceId, span.traceId);
      assert.equal(span.attributes['gatehouse.request.id'], line.requestId);
    } finally {
      await receiver.close();
    }
  });

  it('a trace not sampled exports nothing, and the backend still gets its context, marked not sampled', async () => {
    const before = alpha.received.length;
    const receiver = await startOtlpReceiver();
    try {
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }],
        config: `telemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: 0}`,
      });
      try {
        const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        await c.close();
      } finally {
        await gateway.stop();
      }
      assert.equal(receiver.spans.length, 0);
    } finally {
      await receiver.close();
    }
    const sent = alpha.received.slice(before).find((r) => r.rpcMethods.includes('tools/call'))!;
    assert.match(header(sent.headers['traceparent'])!, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  });

  it('a client\'s words in a span are bounded: a 20000-character tool name makes no 20000-character name or attribute', async () => {
    const long = 'x'.repeat(20_000);
    const { spans } = await traced([{ name: 'alpha', url: alpha.url }], '', async (url) => {
      const c = await connectClient(url, { waitForStandaloneStream: false });
      await c.client.callTool({ name: long, arguments: {} }).catch(() => undefined);
      await c.close();
    });
    const call = only(spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
    assert.ok(call.name.length <= 200, `name of ${call.name.length}`);
    assert.equal(String(call.attributes['gen_ai.tool.name']).length, 1024);
    for (const span of spans) assert.ok(span.name.length <= 200);
  });

  it('2026-07-28: the backend gets the trace context in params._meta as well as in the headers', async () => {
    const modern: Sdk2Server = await startSdk2Server({ name: 'm', posture: 'modern' });
    try {
      const { spans } = await traced([{ name: 'm', url: modern.url }, { name: 'alpha', url: alpha.url }], '', async (url) => {
        const client = new Client2({ name: 'modern-client', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } as never } });
        await client.connect(new Transport2(new URL(url)));
        await client.callTool({ name: 'm_echo', arguments: { text: 'hi' } });
        await client.close();
      });
      const call = only(spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
      const backendCall = only(spans, (s) => s.kind === CLIENT && s.parentSpanId === call.spanId && s.name === 'tools/call m', 'backend call');
      const received = modern.requests.find((r) => (r.body as { method?: string } | null)?.method === 'tools/call')!;
      const expected = `00-${call.traceId}-${backendCall.spanId}-01`;
      assert.equal(header(received.headers['traceparent']), expected);
      const meta = (received.body as { params: { _meta: Record<string, unknown> } }).params._meta;
      assert.equal(meta['traceparent'], expected);
      assert.equal(meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28', 'the envelope is kept');
    } finally {
      await modern.close();
    }
  });
});

describe('telemetry: OTLP metrics', () => {
  it('metricsEnabled pushes the request-path series: HTTP requests, MCP operations by method and tool, backend calls', async () => {
    const alpha = await startSdkServer({ name: 'alpha' });
    const receiver = await startOtlpReceiver();
    try {
      const gateway = await startTestGateway({
        backends: [{ name: 'alpha', url: alpha.url }],
        config: `telemetry: {endpoint: "${receiver.endpoint}", insecure: true, metricsEnabled: true}`,
      });
      try {
        const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        await c.close();
      } finally {
        await gateway.stop();
      }
      assert.equal(receiver.spans.length, 0, 'tracing is off');
      const text = JSON.stringify(receiver.metrics);
      for (const name of ['http.server.request.duration', 'mcp.server.operation.duration', 'gatehouse.backend.request.duration']) assert.ok(text.includes(`"${name}"`), name);
      assert.ok(text.includes('"tools/call"') && text.includes('"echo"'), 'by method and tool');
    } finally {
      await receiver.close();
      await alpha.close();
    }
  });
});

describe('the observation seam', () => {
  let alpha: SdkServer;
  before(async () => {
    alpha = await startSdkServer({ name: 'alpha' });
  });
  after(async () => {
    await alpha.close();
  });

  it('subscribers see each request start and end, and each backend exchange with its request', async () => {
    const started: RequestRecord[] = [];
    const ended: RequestRecord[] = [];
    const exchanges: UpstreamRecord[] = [];
    const onStart = (m: unknown) => started.push(m as RequestRecord);
    const onEnd = (m: unknown) => ended.push(m as RequestRecord);
    const onExchange = (m: unknown) => exchanges.push(m as UpstreamRecord);
    diagnostics.subscribe(CHANNELS.requestStart, onStart);
    diagnostics.subscribe(CHANNELS.requestEnd, onEnd);
    diagnostics.subscribe(CHANNELS.upstreamEnd, onExchange);
    const unscope = scopeRequests();
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }], plugins: [phases] });
    try {
      const c = await connectClient(gateway.url, { waitForStandaloneStream: false });
      await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      await c.close();
    } finally {
      await gateway.stop();
      unscope();
      diagnostics.unsubscribe(CHANNELS.requestStart, onStart);
      diagnostics.unsubscribe(CHANNELS.requestEnd, onEnd);
      diagnostics.unsubscribe(CHANNELS.upstreamEnd, onExchange);
    }
    const ours = ended.filter((r) => r.server === gateway.server);
    const call = ours.find((r) => r.rpcMethod === 'tools/call');
    assert.ok(call !== undefined);
    assert.ok(started.includes(call), 'the same record at start and end');
    assert.equal(call.server, gateway.server);
    assert.equal(call.method, 'POST');
    assert.equal(call.route, 'mcp');
    assert.equal(call.subjectKind, 'tool');
    assert.equal(call.subjectName, 'echo');
    assert.equal(call.status, 200);
    assert.equal(call.outcome, 'ok');
    assert.equal(call.errorCode, null);
    assert.ok(call.seconds > 0);
    assert.ok(call.sessionTag !== null);
    assert.deepEqual(call.phases.map((p) => p.phase), ['authenticate', 'onMessage', 'prepareBackend']);
    assert.ok(!JSON.stringify(call).includes('token'), 'no token in the record');
    const exchange = exchanges.find((e) => e.request === call);
    assert.ok(exchange !== undefined, 'the backend exchange names the request it serves');
    assert.equal(exchange.backend, 'alpha');
    assert.equal(exchange.status, 200);
    assert.equal(exchange.outcome, 'ok');
    assert.equal(ours.filter((r) => r.rpcMethod === 'initialize').length, 1);
  });

  it('a refusal ends with its error code; nothing is published once the subscribers are gone', async () => {
    const ended: RequestRecord[] = [];
    const onEnd = (m: unknown) => ended.push(m as RequestRecord);
    diagnostics.subscribe(CHANNELS.requestEnd, onEnd);
    const gateway = await startTestGateway({ backends: [{ name: 'alpha', url: alpha.url }] });
    try {
      const res = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}' });
      await res.text();
      diagnostics.unsubscribe(CHANNELS.requestEnd, onEnd);
      const after = ended.length;
      await (await fetch(gateway.url.replace('/mcp', '/healthz'))).text();
      assert.equal(ended.length, after);
    } finally {
      diagnostics.unsubscribe(CHANNELS.requestEnd, onEnd);
      await gateway.stop();
    }
    const refused = ended.find((r) => r.route === 'mcp' && r.method === 'POST');
    assert.ok(refused !== undefined);
    assert.equal(refused.status, 400);
    assert.equal(refused.rpcErrorCode, -32700, 'a parse error, answered as JSON-RPC');
    assert.ok(refused.errorCode !== null, `an error code (status ${refused.status})`);
    assert.equal(refused.outcome, 'error');
  });
});

describe('telemetry: the registry server', () => {
  it('traces its requests: a span per request, with its auth hooks (token verification, claims) as children', async () => {
    const { startIssuer } = await import('../registry/helpers/issuer.ts');
    const { startTestRegistry, oauthYaml } = await import('../registry/helpers/registry.ts');
    const receiver = await startOtlpReceiver();
    const issuer = await startIssuer('registry');
    try {
      const registry = await startTestRegistry(
        `${oauthYaml(issuer.url)}database: {type: memory}\ntelemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: 1}\n`,
      );
      try {
        const token = await issuer.token({ sub: 'alice' });
        const me = await registry.request('GET', '/v1/me', { token });
        assert.ok(me.status < 500, `status ${me.status}`);
      } finally {
        await registry.stop();
      }
      const request = only(receiver.spans, (s) => s.kind === SERVER && s.attributes['url.path'] === '/v1/me', 'the request span');
      assert.equal(request.service, 'gatehouse-registry');
      assert.equal(request.attributes['http.request.method'], 'GET');
      const children = receiver.spans.filter((s) => s.parentSpanId === request.spanId).map((s) => s.name);
      assert.ok(children.includes('authenticate registry-bearer-auth'), JSON.stringify(children));
      assert.ok(children.includes('authorize registry-authz'), JSON.stringify(children));
    } finally {
      await issuer.close();
      await receiver.close();
    }
  });
});

describe('telemetry: the gateway\'s own HTTP calls inside a request', () => {
  it('a fetch a hook makes (an STS, an identity provider) is a CLIENT span of the request, and carries the trace on', async () => {
    const { createServer } = await import('node:http');
    const seen: (string | undefined)[] = [];
    const sts = createServer((req, res) => {
      seen.push(header(req.headers['traceparent']));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"x"}');
    });
    await new Promise<void>((resolve) => sts.listen(0, '127.0.0.1', resolve));
    const stsUrl = `http://127.0.0.1:${(sts.address() as { port: number }).port}/token`;
    const exchanging: PluginSpec = {
      definition: {
        name: 'exchanging',
        create: () => ({
          name: 'exchanging',
          prepareBackend: () => async () => {
            await (await fetch(stsUrl, { method: 'POST', body: 'grant_type=x' })).text();
            return undefined;
          },
        }),
      } as PluginSpec['definition'],
      config: {},
      source: 'test',
    };
    const alpha = await startSdkServer({ name: 'alpha' });
    try {
      const { spans } = await traced([{ name: 'alpha', url: alpha.url }], '', async (url) => {
        const c = await connectClient(url, { waitForStandaloneStream: false });
        await c.client.callTool({ name: 'echo', arguments: { text: 'hi' } });
        await c.close();
      }, [exchanging]);
      const call = only(spans, (s) => s.kind === SERVER && s.attributes['mcp.method.name'] === 'tools/call', 'tools/call span');
      const post = only(spans, (s) => s.kind === CLIENT && s.parentSpanId === call.spanId && s.name === 'POST', 'the STS call');
      assert.equal(post.attributes['server.address'], new URL(stsUrl).host);
      assert.equal(post.attributes['http.response.status_code'], 200);
      assert.ok(seen.includes(`00-${call.traceId}-${post.spanId}-01`), `the STS got the trace: ${JSON.stringify(seen)}`);
    } finally {
      await alpha.close();
      await new Promise<void>((resolve) => sts.close(() => resolve()));
    }
  });
});

describe('telemetry: the embedded authorization server', () => {
  it('its requests are traced (register, authorize, the upstream callback, token), its calls to the identity provider are CLIENT spans, and the token it issued is verified in the MCP request\'s span', async () => {
    const { freePort } = await import('../fixtures/processes.ts');
    const { ClientFlows, startYamlGateway } = await import('../auth-server/helpers/flows.ts');
    const { USER } = await import('../auth-server/helpers/setup.ts');
    const { startUpstreamIdp } = await import('../auth-server/helpers/upstream-idp.ts');
    const receiver = await startOtlpReceiver();
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const idp = await startUpstreamIdp({ user: USER, redirectUri: `${issuer}/oauth/callback`, clientSecret: 'corp-secret' });
    const backend = await startSdkServer({ name: 'echo' });
    try {
      const gateway = await startYamlGateway({
        port,
        backendUrl: backend.url,
        idpIssuer: idp.issuer,
        storage: '{type: memory}',
        persistentKeys: false,
        config: `telemetry: {endpoint: "${receiver.endpoint}", insecure: true, tracingEnabled: true, samplingRate: 1}`,
      });
      try {
        const flows = new ClientFlows(issuer);
        const client = await flows.register();
        const { access } = await flows.login(client);
        assert.equal(await flows.mcpStatus(access), 200);
      } finally {
        await gateway.stop();
      }
      const servers = receiver.spans.filter((s) => s.kind === SERVER);
      const paths = servers.map((s) => `${s.attributes['http.request.method']} ${s.attributes['url.path']}`);
      for (const expected of ['POST /oauth/register', 'GET /oauth/authorize', 'GET /oauth/callback', 'POST /oauth/token']) assert.ok(paths.includes(expected), `${expected} in ${JSON.stringify(paths)}`);
      // The provider runs behind its loopback bridge: its calls to the identity provider (the code exchange, userinfo) are still the gateway request's.
      const idpCalls = receiver.spans.filter((s) => s.kind === CLIENT && s.attributes['server.address'] === new URL(idp.issuer).host);
      assert.ok(idpCalls.some((s) => s.name === 'POST'), `the code exchange with the identity provider: ${JSON.stringify(receiver.spans.filter((s) => s.kind === CLIENT).map((s) => [s.name, s.attributes['server.address']]))}`);
      for (const call of idpCalls) {
        const parent = servers.find((s) => s.spanId === call.parentSpanId);
        assert.ok(parent !== undefined && String(parent.attributes['url.path']).startsWith('/oauth/'), 'a child of the authorization server request that made it');
        assert.equal(call.traceId, parent.traceId);
      }
      const initialize = only(servers, (s) => s.attributes['mcp.method.name'] === 'initialize', 'the MCP initialize');
      assert.ok(receiver.spans.some((s) => s.parentSpanId === initialize.spanId && s.name.startsWith('authenticate ')), 'token verification is a child of the MCP request');
      for (const span of receiver.spans) assert.ok(!JSON.stringify(span.attributes).includes('Bearer'), 'no token in any span');
    } finally {
      await backend.close();
      await idp.close();
      await receiver.close();
    }
  });
});
