/**
 * Starts a Gatehouse vMCP in the test process from a real YAML file (so every test also goes
 * through the config loader), on 127.0.0.1 and a free port.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadVmcpConfig } from '../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import { createLogger, type Logger } from '../../core/observe/log.ts';
import type { PluginSpec } from '../../core/plugin-api/plugin-loader.ts';
import type { UpstreamOptions } from '../../core/upstream/upstreams.ts';
import type { ChannelOpeners } from '../../core/upstream/channel/channel-backends.ts';
import { startVmcp, type RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { VmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';

export interface TestBackend {
  name: string;
  /** The streamable-HTTP URL; or give `transport` instead. */
  url?: string;
  /** The MCPServer's transport fields as YAML lines under `spec:` (e.g. `transport: stdio` and `command: node`), instead of `url`. */
  transport?: string;
  /** `spec.timeout` of the MCPServer, e.g. `300ms`. */
  timeout?: string;
  /** `spec.externalAuthConfigRef.name`: the MCPExternalAuthConfig of its outgoing auth. */
  externalAuthConfigRef?: string;
  /** `metadata.annotations` (e.g. the claims annotation `toolhive.stacklok.dev/authz-claims`). */
  annotations?: Record<string, string>;
}

export interface VmcpYamlOptions {
  backends: TestBackend[];
  /** YAML (indented for `spec:`) replacing the default anonymous incomingAuth block. */
  incomingAuth?: string;
  /** Extra lines under the VirtualMCPServer `spec:` (indented by two spaces). */
  spec?: string;
  /** `spec.outgoingAuth` (YAML flow style); default `{source: discovered}`. */
  outgoingAuth?: string;
  /** Extra keys of `spec.config` (YAML flow style), e.g. `aggregation: {pageSize: 8}`. */
  config?: string;
  /** Extra documents appended to the file. */
  documents?: string;
}

/** The MCPGroup `tools` with one MCPServer `echo`, each a document ending in `---`: a VirtualMCPServer follows. */
export const GROUP_WITH_ECHO = `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: echo}
spec: {url: "http://127.0.0.1:9100/mcp", groupRef: tools}
---
`;

export function vmcpYaml(options: VmcpYamlOptions): string {
  const docs = [
    'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: tools}',
    ...options.backends.map(
      (b) =>
        `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata: {name: ${b.name}${b.annotations ? `, annotations: ${JSON.stringify(b.annotations)}` : ''}}\nspec:\n` +
        (b.transport === undefined ? `  url: "${b.url}"\n  transport: streamable-http` : b.transport.split('\n').map((line) => `  ${line}`).join('\n')) +
        `\n  groupRef: tools` +
        (b.timeout ? `\n  timeout: ${b.timeout}` : '') +
        (b.externalAuthConfigRef ? `\n  externalAuthConfigRef: {name: ${b.externalAuthConfigRef}}` : ''),
    ),
    'apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: vmcp}\nspec:\n  config: {groupRef: tools' +
      (options.config ? ', ' + options.config : '') +
      '}\n' +
      (options.incomingAuth ?? '  incomingAuth: {type: anonymous}') +
      `\n  outgoingAuth: ${options.outgoingAuth ?? '{source: discovered}'}` +
      (options.spec ? '\n' + options.spec : ''),
  ];
  if (options.documents) docs.push(options.documents);
  return docs.join('\n---\n') + '\n';
}

export async function writeConfig(yaml: string, name = 'vmcp.yaml'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-test-'));
  const file = join(dir, name);
  await writeFile(file, yaml);
  return file;
}

export interface StartOptions extends VmcpYamlOptions {
  /** The port to listen on (default: any free one). */
  port?: number;
  plugins?: PluginSpec[];
  /** A logger of the test's own (to assert on what is logged); else one at `logLevel`. */
  log?: Logger;
  /** Log level of the gateway (default silent; set GATEHOUSE_TEST_LOG=debug to see it). */
  logLevel?: 'silent' | 'debug' | 'info' | 'warn';
  /** Connection limits toward the backends (small ones, to reach them in a test). */
  upstreams?: Partial<UpstreamOptions>;
  /** The built-ins of this gateway and its reloads (what `gatehouse vmcp serve` keeps across reloads); default a fresh one. */
  builtins?: VmcpBuiltins;
  /** How stdio and SSE backends are reached (default: real processes and connections). */
  channelOpeners?: ChannelOpeners;
}

export async function startTestGateway(options: StartOptions): Promise<RunningVmcp & { file: string }> {
  const file = await writeConfig(vmcpYaml(options));
  const loaded = await loadVmcpConfig(file);
  // GATEHOUSE_TEST_ENGINE=node runs the same test on node:http instead of Gatehouse's own server.
  const engine = process.env.GATEHOUSE_TEST_ENGINE;
  const config: VmcpConfig = engine === 'node' || engine === 'gatehouse' ? { ...loaded, server: { ...loaded.server, engine } } : loaded;
  const level = (process.env.GATEHOUSE_TEST_LOG as StartOptions['logLevel']) ?? options.logLevel ?? 'silent';
  const running = await startVmcp({
    config,
    port: options.port ?? 0,
    log: options.log ?? createLogger(level),
    builtins: (options.builtins ?? new VmcpBuiltins()).for(config),
    ...(options.plugins ? { plugins: options.plugins } : {}),
    ...(options.upstreams ? { upstreams: options.upstreams } : {}),
    ...(options.channelOpeners ? { channelOpeners: options.channelOpeners } : {}),
  });
  return Object.assign(running, { file });
}

/** A raw POST to the gateway, for bad-input tests that the SDK client would never send. */
export async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } },
});

/** A raw 2025-11-25 session: initialize, then notifications/initialized; the headers its requests carry. */
export async function openRawSession(url: string): Promise<Record<string, string>> {
  const init = await post(url, INITIALIZE);
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.text}`);
  const headers: Record<string, string> = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await post(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', headers);
  return headers;
}
