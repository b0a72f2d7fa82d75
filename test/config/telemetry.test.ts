/**
 * `spec.config.telemetry` (ToolHive's vMCP field names) and the registry's `telemetry`: off by
 * default, each field resolved, each mistake reported with its YAML path; and the W3C trace
 * context the tracer takes from a trusted client, strictly (core/observe/telemetry/trace-context.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { parseTraceparent, remoteParent, validTracestate } from '../../core/observe/telemetry/trace-context.ts';
import { signalUrl, TELEMETRY_OFF } from '../../core/observe/telemetry/telemetry-settings.ts';
import { withTraceMeta } from '../../core/observe/telemetry/meta-propagation.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';
import { readdirSync, readFileSync } from 'node:fs';

const backends = [{ name: 'github', url: 'http://127.0.0.1:9101/mcp' }];

async function validate(config: string | undefined) {
  return validateVmcpFile(await writeConfig(vmcpYaml({ backends, ...(config === undefined ? {} : { config }) })));
}

async function problemsOf(config: string): Promise<string> {
  const result = await validate(config);
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? '' : formatProblems(result.problems);
}

describe('telemetry config', () => {
  it('is off without the section', async () => {
    const result = await validate(undefined);
    assert.ok(result.ok);
    assert.deepEqual(result.config.telemetry, TELEMETRY_OFF);
  });

  it('resolves every field (the rate as ToolHive writes it, a string, or a number)', async () => {
    const result = await validate('telemetry: {endpoint: "otel-collector:4318/base/", serviceName: vmcp-prod, insecure: true, tracingEnabled: true, metricsEnabled: true, samplingRate: "0.25", headers: {x-api-key: abc}, trustClientTraceContext: true}');
    assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
    const telemetry = result.config.telemetry;
    assert.deepEqual(telemetry, {
      endpoint: 'otel-collector:4318/base/',
      serviceName: 'vmcp-prod',
      insecure: true,
      tracingEnabled: true,
      metricsEnabled: true,
      samplingRate: 0.25,
      headers: { 'x-api-key': 'abc' },
      trustClientTraceContext: true,
    });
    assert.equal(signalUrl(telemetry, 'traces'), 'http://otel-collector:4318/base/v1/traces');
    assert.equal(signalUrl({ ...telemetry, endpoint: 'collector:4318', insecure: false }, 'metrics'), 'https://collector:4318/v1/metrics');
    const numeric = await validate('telemetry: {endpoint: "c:4318", tracingEnabled: true, samplingRate: 1}');
    assert.ok(numeric.ok);
    assert.equal(numeric.config.telemetry.samplingRate, 1);
    assert.equal(numeric.config.telemetry.trustClientTraceContext, false);
  });

  it('names the YAML path of each mistake', async () => {
    assert.match(await problemsOf('telemetry: {endpoint: "http://c:4318", tracingEnabled: true}'), /spec\.config\.telemetry\.endpoint: is host:port, without a scheme .*"c:4318"/);
    assert.match(await problemsOf('telemetry: {endpoint: "collector", tracingEnabled: true}'), /spec\.config\.telemetry\.endpoint: must be host:port/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: true, samplingRate: "lots"}'), /spec\.config\.telemetry\.samplingRate: must be a number from 0 to 1/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: true, samplingRate: 2}'), /samplingRate: must be a number from 0 to 1/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318"}'), /spec\.config\.telemetry\.endpoint: an endpoint is set, but tracingEnabled and metricsEnabled are both false/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: true, headers: {"bad header": x}}'), /spec\.config\.telemetry\.headers\["bad header"\]|telemetry\.headers.*bad header/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: true, headers: {x-key: " padded"}}'), /telemetry\.headers\.x-key: the value begins or ends with whitespace/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: ture}'), /spec\.config\.telemetry\.tracingEnabled/);
    assert.match(await problemsOf('telemetry: {endpoint: "c:4318", tracingEnabled: true, sampleRate: 1}'), /spec\.config\.telemetry.*sampleRate/);
  });

  it('needs an endpoint where something is enabled, unless OTEL_EXPORTER_OTLP_ENDPOINT gives one', async () => {
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    try {
      assert.match(await problemsOf('telemetry: {tracingEnabled: true}'), /spec\.config\.telemetry\.endpoint: is needed where tracing or metrics are enabled/);
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:4318';
      assert.ok((await validate('telemetry: {tracingEnabled: true}')).ok);
    } finally {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    }
  });
});

describe('telemetry off costs nothing', () => {
  it('no module of the core imports the OpenTelemetry SDK but by type, or dynamically: off, none of it is loaded', () => {
    const dir = new URL('../../core/observe/telemetry/', import.meta.url);
    const files = readdirSync(dir).filter((name) => name.endsWith('.ts'));
    assert.ok(files.includes('start-telemetry.ts'));
    for (const name of files) {
      const text = readFileSync(new URL(name, dir), 'utf8');
      for (const line of text.split('\n').filter((l) => /^import .*['"]@opentelemetry\//.test(l))) {
        assert.match(line, /^import type /, `${name}: ${line}`);
      }
    }
  });
});

describe('trace context from a client', () => {
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const span = '00f067aa0ba902b7';

  it('takes a valid traceparent, and a future version\'s extra fields', () => {
    assert.deepEqual(parseTraceparent(`00-${trace}-${span}-01`), { traceId: trace, spanId: span, sampled: true });
    assert.deepEqual(parseTraceparent(`00-${trace}-${span}-00`), { traceId: trace, spanId: span, sampled: false });
    assert.deepEqual(parseTraceparent(`01-${trace}-${span}-03-future`), { traceId: trace, spanId: span, sampled: true });
  });

  it('refuses anything else: CR/LF, oversize, upper case, zero ids, version ff, extra fields on 00, short ids', () => {
    for (const bad of [
      `00-${trace}-${span}-01\r\nx-injected: 1`,
      `00-${trace}-${span}-01\n`,
      `00-${trace}-${span}-01-`,
      `01-${trace}-${span}-01-` + 'x'.repeat(300),
      `00-${trace.toUpperCase()}-${span}-01`,
      `00-${'0'.repeat(32)}-${span}-01`,
      `00-${trace}-${'0'.repeat(16)}-01`,
      `ff-${trace}-${span}-01`,
      `00-${trace.slice(1)}-${span}-01`,
      `00_${trace}_${span}_01`,
      '',
    ]) {
      assert.equal(parseTraceparent(bad), null, JSON.stringify(bad));
    }
    assert.equal(parseTraceparent(undefined), null);
  });

  it('keeps a valid tracestate only: 32 members at most, 512 characters, no duplicates, no control characters', () => {
    assert.equal(validTracestate('rojo=00f067aa0ba902b7, congo=t61rcWkgMzE'), 'rojo=00f067aa0ba902b7, congo=t61rcWkgMzE');
    assert.equal(validTracestate('tenant@vendor=v'), 'tenant@vendor=v');
    for (const bad of ['a=b\r\nx: y', 'a=1,a=2', 'UPPER=1', 'k=' + 'v'.repeat(600), Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','), 'novalue', 'k=a,b', '']) {
      assert.equal(validTracestate(bad), null, JSON.stringify(bad));
    }
    assert.deepEqual(remoteParent(`00-${trace}-${span}-01`, 'a=1,a=2'), { traceId: trace, spanId: span, sampled: true, traceState: null });
    assert.equal(remoteParent('garbage', 'a=1'), null);
  });

  it('puts the context in params._meta, replacing a client\'s, keeping the rest of the envelope', () => {
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', _meta: { traceparent: 'evil', tracestate: 'evil=1', 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } };
    const sent = JSON.parse(withTraceMeta(message, `00-${trace}-${span}-01`, null).toString()) as typeof message;
    assert.deepEqual(sent.params._meta, { traceparent: `00-${trace}-${span}-01`, 'io.modelcontextprotocol/protocolVersion': '2026-07-28' });
    assert.equal(sent.params.name, 'echo');
    const bare = JSON.parse(withTraceMeta({ jsonrpc: '2.0', id: 2, method: 'ping' }, `00-${trace}-${span}-00`, 'k=v').toString()) as { params: { _meta: unknown } };
    assert.deepEqual(bare.params._meta, { traceparent: `00-${trace}-${span}-00`, tracestate: 'k=v' });
  });
});
