/**
 * The audit trail's outputs and configuration, without a gateway: RFC 5424 syslog messages (their
 * header cut to printable ASCII, CR/LF/NUL never in a message) to a UDP and a TCP listener on
 * loopback; the file rotated by size, 0600; the `audit` section's fields resolved and each mistake
 * reported with its YAML path; and a record built from a plugin's event (bounded, its own keys
 * kept).
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatProblem, formatProblems } from '../../core/config/problems.ts';
import { validateRegistryText } from '../../plugins/registry/config/registry-config.ts';
import { registryRestartNeeded } from '../../plugins/registry/registry-reload.ts';
import { restartNeeded } from '../../core/vmcp/reload-diff.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { operationLine, MAX_TEXT } from '../../core/observe/audit/audit-record.ts';
import { RotatingFile } from '../../core/observe/audit/audit-file.ts';
import { AUDIT_OFF } from '../../core/observe/audit/audit-settings.ts';
import { recordsType } from '../../core/observe/audit/audit-trail.ts';
import { headerField, SyslogSender, syslogMessage } from '../../core/observe/audit/syslog.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const HOSTILE = 'tool\r\n<13>1 2026-01-01T00:00:00Z forged app - - - {"type":"forged"}\u0000';

describe('audit: syslog', () => {
  it('formats RFC 5424: priority, version, header fields printable, the JSON record as MSG', () => {
    const json = JSON.stringify({ type: 'mcp_tool_call', tool: HOSTILE });
    const message = syslogMessage({ facility: 16, appName: 'vmcp\r\nforged', hostname: 'host name\n', pid: 42 }, '2026-11-29T16:00:00.000Z', 'mcp_tool_call', 'denied', json);
    assert.equal(message, `<133>1 2026-11-29T16:00:00.000Z hostname vmcpforged 42 mcp_tool_call - ${json}`);
    assert.doesNotMatch(message, /[\r\n\0]/);
    assert.equal(syslogMessage({ facility: 10, appName: 'a', hostname: 'h', pid: 1 }, 't', 'x', 'success', '{}').slice(0, 5), '<86>1');
    assert.equal(headerField('', 10), '-');
    assert.equal(headerField('x'.repeat(100), 48).length, 48);
  });

  it('sends each record as one datagram to a UDP listener', async () => {
    const listener = createSocket('udp4');
    await new Promise<void>((resolve) => listener.bind(0, '127.0.0.1', resolve));
    const got: string[] = [];
    const arrived = new Promise<void>((resolve) => listener.on('message', (data) => { got.push(data.toString()); if (got.length === 2) resolve(); }));
    const sender = new SyslogSender({ transport: 'udp', host: '127.0.0.1', port: (listener.address() as AddressInfo).port });
    const header = { facility: 16, appName: 'gatehouse' };
    sender.send(syslogMessage(header, 't1', 'mcp_tool_call', 'success', JSON.stringify({ tool: HOSTILE })));
    sender.send(syslogMessage(header, 't2', 'mcp_initialize', 'success', '{}'));
    await arrived;
    await sender.close();
    listener.close();
    assert.equal(got.length, 2);
    assert.match(got[0]!, /^<134>1 t1 \S+ gatehouse \d+ mcp_tool_call - \{"tool":"tool\\r\\n<13>1 .*\\u0000"\}$/);
    assert.doesNotMatch(got[0]!, /[\r\n\0]/);
  });

  it('frames messages by octet counting over TCP, and holds them until the connection is up', async () => {
    let received = '';
    const server = createServer((socket) => socket.on('data', (data) => { received += data.toString(); }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sender = new SyslogSender({ transport: 'tcp', host: '127.0.0.1', port: (server.address() as AddressInfo).port });
    const one = syslogMessage({ facility: 16, appName: 'g' }, 't', 'auth_login', 'denied', JSON.stringify({ sub: 'é\nx' }));
    sender.send(one);
    sender.send(one);
    for (let i = 0; i < 100 && received.length < 2 * one.length; i++) await new Promise((r) => setTimeout(r, 10));
    await sender.close();
    server.close();
    const frame = `${Buffer.byteLength(one)} ${one}`;
    assert.equal(received, frame + frame);
  });
});

describe('audit: the file', () => {
  it('rotates by size into .1 … .maxFiles, the oldest dropped, no record lost or split, created 0600', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-audit-'));
    const path = join(dir, 'audit.log');
    const file = new RotatingFile(path, 1000, 2);
    const line = (i: number): string => `${JSON.stringify({ i, pad: 'x'.repeat(80) })}\n`;
    for (let i = 0; i < 60; i++) file.write(line(i));
    await file.close();
    const names = (await readdir(dir)).sort();
    assert.deepEqual(names, ['audit.log', 'audit.log.1', 'audit.log.2']);
    const kept: number[] = [];
    for (const name of ['audit.log.2', 'audit.log.1', 'audit.log']) {
      const text = await readFile(join(dir, name), 'utf8');
      assert.ok(Buffer.byteLength(text) <= 1000, `${name} is ${Buffer.byteLength(text)} bytes`);
      for (const l of text.split('\n').filter((x) => x !== '')) kept.push((JSON.parse(l) as { i: number }).i);
    }
    // The newest records, in order, none missing between the oldest kept and the last.
    assert.equal(kept.at(-1), 59);
    assert.deepEqual(kept, Array.from({ length: kept.length }, (_, k) => 60 - kept.length + k));
    assert.equal((await stat(path)).mode & 0o777, 0o600);
  });
});

describe('audit: a plugin\'s event as a record', () => {
  it('bounds what a client chose, keeps its own keys, names no more than it is given', () => {
    const line = operationLine({
      origin: {}, type: 'registry_publish', outcome: 'success', time: Date.UTC(2026, 10, 29), requestId: 'r1',
      principal: { subject: 's'.repeat(5000), issuer: 'https://idp', clientId: null }, clientId: 'c1', clientAddress: '10.0.0.1', errorCode: null,
      details: { name: 'n'.repeat(5000), type: 'forged', outcome: 'forged' },
    }, 'gatehouse-registry');
    assert.equal(line.type, 'registry_publish');
    assert.equal(line.outcome, 'success');
    assert.equal((line.sub as string).length, MAX_TEXT + 1);
    assert.equal((line.name as string).length, MAX_TEXT + 1);
    assert.equal(line.clientId, 'c1');
    assert.equal(line.time, '2026-11-29T00:00:00.000Z');
  });

  it('excludeEventTypes wins over eventTypes; an empty eventTypes records every type', () => {
    assert.equal(recordsType({ eventTypes: [], excludeEventTypes: [] }, 'auth_login'), true);
    assert.equal(recordsType({ eventTypes: ['auth_login'], excludeEventTypes: ['auth_login'] }, 'auth_login'), false);
    assert.equal(recordsType({ eventTypes: ['auth_login'], excludeEventTypes: [] }, 'mcp_ping'), false);
  });
});

describe('audit: config (spec.config.audit)', () => {
  const backends = [{ name: 'github', url: 'http://127.0.0.1:9101/mcp' }];
  const validate = async (config?: string) => validateVmcpFile(await writeConfig(vmcpYaml({ backends, ...(config === undefined ? {} : { config }) })));
  const problemsOf = async (config: string): Promise<string> => {
    const result = await validate(config);
    assert.equal(result.ok, false, 'expected problems');
    return result.ok ? '' : formatProblems(result.problems);
  };

  it('is off without the section, and with enabled: false', async () => {
    const none = await validate();
    assert.ok(none.ok);
    assert.deepEqual(none.config.audit, AUDIT_OFF);
    const off = await validate('audit: {logFile: /tmp/x.log}');
    assert.ok(off.ok);
    assert.equal(off.config.audit.enabled, false);
  });

  it('resolves ToolHive\'s fields, a relative logFile against the file\'s directory, rotation, syslog', async () => {
    const file = await validate('audit: {enabled: true, component: vmcp-prod, eventTypes: [mcp_tool_call, auth_login], excludeEventTypes: [mcp_ping], includeRequestData: true, maxDataSize: 4096, logFile: audit/audit.log, rotation: {maxSize: 10Mi, maxFiles: 3}}');
    assert.ok(file.ok, file.ok ? '' : formatProblems(file.problems));
    const audit = file.config.audit;
    assert.equal(audit.component, 'vmcp-prod');
    assert.deepEqual(audit.eventTypes, ['mcp_tool_call', 'auth_login']);
    assert.equal(audit.includeRequestData, true);
    assert.equal(audit.maxDataSize, 4096);
    assert.equal(audit.output.kind, 'file');
    assert.ok(audit.output.kind === 'file' && audit.output.path.endsWith('/audit/audit.log') && audit.output.maxSize === 10 * 1024 * 1024 && audit.output.maxFiles === 3);
    const syslog = await validate('audit: {enabled: true, syslog: {address: "tcp://[::1]:601", facility: authpriv}}');
    assert.ok(syslog.ok, syslog.ok ? '' : formatProblems(syslog.problems));
    assert.deepEqual(syslog.config.audit.output, { kind: 'syslog', transport: 'tcp', host: '::1', port: 601, facility: 10, appName: null });
    const stdout = await validate('audit: {enabled: true}');
    assert.ok(stdout.ok);
    assert.deepEqual(stdout.config.audit.output, { kind: 'stdout' });
  });

  it('names the YAML path of each mistake', async () => {
    assert.match(await problemsOf('audit: {enabled: true, eventTypes: [mcp_tool_cal]}'), /spec\.config\.audit\.eventTypes\[0\]: is not an event type: "mcp_tool_cal"/);
    assert.match(await problemsOf('audit: {enabled: true, excludeEventTypes: [nope]}'), /spec\.config\.audit\.excludeEventTypes\[0\]: is not an event type/);
    assert.match(await problemsOf('audit: {enabled: true, logFile: a.log, syslog: {address: "udp://h:514"}}'), /spec\.config\.audit\.syslog: logFile and syslog are both set/);
    assert.match(await problemsOf('audit: {enabled: true, syslog: {address: "h:514"}}'), /spec\.config\.audit\.syslog\.address: must be udp:\/\/host:port or tcp:\/\/host:port/);
    assert.match(await problemsOf('audit: {enabled: true, syslog: {address: "udp://h:514", facility: local9}}'), /spec\.config\.audit\.syslog\.facility/);
    assert.match(await problemsOf('audit: {enabled: true, rotation: {maxSize: 1Mi}}'), /spec\.config\.audit\.rotation: is the rotation of logFile, which is not set/);
    assert.match(await problemsOf('audit: {enabled: true, includeResponseData: true}'), /spec\.config\.audit\.includeResponseData: Gatehouse does not record response data/);
    assert.match(await problemsOf('audit: {enabled: true, maxDataSize: 0}'), /spec\.config\.audit\.maxDataSize/);
    assert.match(await problemsOf('audit: {enabled: true, detectApplicationErrors: true}'), /spec\.config\.audit\.detectApplicationErrors: Gatehouse does not read a backend's answer/);
    assert.ok((await validate('audit: {enabled: true, detectApplicationErrors: false, includeResponseData: false}')).ok);
  });

  it('a log file with several workers is refused (each would rotate it on its own); syslog is not', async () => {
    const file = async (audit: string) => validateVmcpFile(await writeConfig(vmcpYaml({ backends, config: audit, spec: '  server: {workers: 2}' })));
    const refused = await file('audit: {enabled: true, logFile: a.log}');
    assert.match(refused.ok ? '' : formatProblems(refused.problems), /spec\.config\.audit\.logFile: 2 workers need an audit trail each can write alone, but logFile is one file/);
    const syslog = await file('audit: {enabled: true, syslog: {address: "udp://127.0.0.1:514"}}');
    assert.doesNotMatch(syslog.ok ? '' : formatProblems(syslog.problems), /audit/);
    const registry = validateRegistryText('auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: default, sources: [internal]}]\ndatabase: {type: postgres, url: "postgres://127.0.0.1/x"}\nserver: {workers: auto}\naudit: {enabled: true, logFile: a.log}\n', 'registry.yaml');
    assert.match(registry.ok ? '' : registry.problems.map(formatProblem).join('\n'), /audit\.logFile: auto \(a worker per core\) needs an audit trail/);
    assert.match(await problemsOf('audit: {enabled: true, logfile: a.log}'), /spec\.config\.audit.*logfile/);
  });
});

describe('audit: config (the registry\'s audit)', () => {
  const base = 'auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: default, sources: [internal]}]\ndatabase: {type: memory}\n';

  it('resolves the same fields, a relative logFile against the file\'s directory', () => {
    const result = validateRegistryText(`${base}audit: {enabled: true, logFile: audit.log, excludeEventTypes: [http_request]}\n`, '/etc/gatehouse/registry.yaml');
    assert.ok(result.ok, result.ok ? '' : result.problems.map(formatProblem).join('\n'));
    assert.deepEqual(result.config.audit.output, { kind: 'file', path: '/etc/gatehouse/audit.log', maxSize: 100 * 1024 * 1024, maxFiles: 5 });
    assert.deepEqual(result.config.audit.excludeEventTypes, ['http_request']);
    const none = validateRegistryText(base, '/etc/gatehouse/registry.yaml');
    assert.ok(none.ok);
    assert.deepEqual(none.config.audit, AUDIT_OFF);
  });

  it('names the YAML path of a mistake', () => {
    const result = validateRegistryText(`${base}audit: {enabled: true, eventTypes: [registry_publsh]}\n`, 'registry.yaml');
    assert.equal(result.ok, false);
    assert.match(result.ok ? '' : result.problems.map(formatProblem).join('\n'), /audit\.eventTypes\[0\]: is not an event type: "registry_publsh"/);
  });
});

describe('audit: a change needs a restart', () => {
  it('a reload that changes the vMCP\'s or the registry\'s audit is refused, naming it', async () => {
    const backends = [{ name: 'github', url: 'http://127.0.0.1:9101/mcp' }];
    const before = await validateVmcpFile(await writeConfig(vmcpYaml({ backends })));
    const after = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, config: 'audit: {enabled: true}' })));
    assert.ok(before.ok && after.ok);
    assert.deepEqual(restartNeeded(before.config, after.config).map((p) => p.path.replace(/^.* spec/, 'spec')), ['spec.config.audit']);
    const base = 'auth: {mode: anonymous}\nsources: [{name: internal, managed: {}}]\nregistries: [{name: default, sources: [internal]}]\ndatabase: {type: memory}\n';
    const r1 = validateRegistryText(base, '/etc/registry.yaml');
    const r2 = validateRegistryText(`${base}audit: {enabled: true}\n`, '/etc/registry.yaml');
    assert.ok(r1.ok && r2.ok);
    assert.deepEqual(registryRestartNeeded(r1.config, r2.config).map((p) => p.path), ['/etc/registry.yaml audit']);
  });
});
