/**
 * Composes a running virtual MCP server from its resolved config: plugins, chain, backends,
 * connection pools, the MCP endpoint and the HTTP server. The composition root (the CLI, or a
 * user's own code) decides which plugins run; this file knows no identity provider.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { backendInfo, type BackendInfo } from './backend.ts';
import { Chain } from './chain.ts';
import type { VmcpConfig } from './config/vmcp-types.ts';
import type { McpEndpoint } from './mcp/mcp-endpoint.ts';
import { TransparentEndpoint } from './mcp/transparent-endpoint.ts';
import { OpenStreams } from './mcp/streams.ts';
import { createAggregated } from './mcp/aggregate/compose.ts';
import { needsAggregation } from './mcp/aggregate/config.ts';
import { createLogger } from './observe/log.ts';
import { GatewayMetrics } from './observe/metrics.ts';
import { createPlugins, importPlugin, type PluginSpec } from './plugin-loader.ts';
import type { Plugin, PluginHost } from './plugin.ts';
import { GatewayServer } from './gateway-server.ts';
import { Upstreams } from './upstream/upstreams.ts';

export interface StartVmcpOptions {
  config: VmcpConfig;
  host?: string;
  port?: number;
  log?: Logger;
  /** Plugins the composition root chose for this config (incoming auth first). */
  builtins?: readonly PluginSpec[];
  /** Plugins given in code; they run after those of the config file. */
  plugins?: readonly PluginSpec[];
  metrics?: GatewayMetrics;
}

export interface RunningVmcp {
  /** URL of the MCP endpoint on the bound address. */
  readonly url: string;
  readonly address: AddressInfo;
  readonly server: GatewayServer;
  readonly backends: readonly BackendInfo[];
  stop(): Promise<void>;
}

/** A part of the config that validates but that this build cannot serve yet. */
export class NotAvailableError extends Error {
  readonly parts: readonly string[];
  constructor(parts: readonly string[]) {
    super(parts.join('\n'));
    this.name = 'NotAvailableError';
    this.parts = parts;
  }
}

export function mcpPathOf(config: VmcpConfig): string {
  const resourceUrl = config.incomingAuth.resourceUrl;
  return resourceUrl === null ? '/mcp' : new URL(resourceUrl).pathname;
}

export async function startVmcp(options: StartVmcpOptions): Promise<RunningVmcp> {
  const { config } = options;
  const log = options.log ?? createLogger();
  const metrics = options.metrics ?? new GatewayMetrics();

  const backends = config.backends.map((b) => backendInfo(b.name, b.url, b.timeoutMs, b.externalAuth));
  const mcpPath = mcpPathOf(config);

  // Plugins: built-ins first (incoming auth is the first phase of everything), then the config's, then code's.
  const fromConfig: PluginSpec[] = [];
  for (const ref of config.plugins) {
    fromConfig.push({ definition: await importPlugin(ref.module, ref.yamlPath), config: ref.config, source: ref.yamlPath });
  }
  const specs = [...(options.builtins ?? []), ...fromConfig, ...(options.plugins ?? [])];
  let challengeSink: GatewayServer | null = null;
  let pendingChallenge: Parameters<GatewayServer['setAuthChallenge']>[0] | null = null;
  const hostFor = (name: string): PluginHost => ({
    log: log.child({ plugin: name }),
    metrics: metrics.registry,
    mcpPath,
    backends,
    configDir: config.dir,
    setAuthChallenge(challenge) {
      if (challengeSink === null) pendingChallenge = challenge;
      else challengeSink.setAuthChallenge(challenge);
    },
  });
  const plugins: Plugin[] = await createPlugins(specs, hostFor);

  const chain = new Chain(plugins, metrics.phaseTimer);
  const upstreams = new Upstreams();
  const publicUrls = [config.incomingAuth.resourceUrl, config.authServer?.issuer].filter((u): u is string => typeof u === 'string');

  const streams = new OpenStreams(metrics);
  const aggregated = needsAggregation(backends.length, config.aggregation)
    ? await createAggregated({ config, path: mcpPath, backends, upstreams, chain, metrics, streams, log })
    : null;
  const endpoint: McpEndpoint =
    aggregated?.endpoint ??
    new TransparentEndpoint({
      path: mcpPath,
      backend: backends[0]!,
      upstreams,
      chain,
      metrics: metrics.backend(backends[0]!.name),
      streams,
      maxBodyBytes: config.server.maxBodyBytes,
    });
  const server = new GatewayServer({
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 4483,
    log,
    metrics,
    chain,
    mcp: endpoint,
    streams,
    publicUrls,
    allowedHosts: config.server.allowedHosts,
    allowedOrigins: config.server.allowedOrigins,
    shutdownGraceMs: config.server.shutdownGraceMs,
    requestTimeoutMs: config.server.requestTimeoutMs,
    accessLog: config.server.accessLog,
    engine: config.server.engine,
    admin: config.server.admin,
  });
  challengeSink = server;
  if (pendingChallenge !== null) server.setAuthChallenge(pendingChallenge);

  const address = await server.listen();
  const started: Plugin[] = [];
  try {
    for (const plugin of plugins) {
      await plugin.start?.();
      started.push(plugin);
    }
  } catch (err) {
    await server.close();
    await upstreams.close();
    await aggregated?.close();
    throw err;
  }
  aggregated?.health.start();
  server.markReady();
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${mcpPath}`;
  const admin = server.adminAddress;
  log.info(
    {
      url,
      mode: aggregated === null ? 'transparent' : 'aggregated',
      backends: backends.map((b) => `${b.name}=${b.url.href}`),
      ...(admin === null ? {} : { admin: `http://${admin.family === 'IPv6' ? `[${admin.address}]` : admin.address}:${admin.port}` }),
    },
    'virtual MCP server listening',
  );

  let stopping: Promise<void> | null = null;
  return {
    url,
    address,
    server,
    backends,
    stop() {
      stopping ??= (async () => {
        await server.close();
        await endpoint.close();
        await upstreams.close();
        await aggregated?.close();
        for (const plugin of started.reverse()) {
          try {
            await plugin.stop?.();
          } catch (err) {
            log.error({ err, plugin: plugin.name }, 'plugin failed to stop');
          }
        }
      })();
      return stopping;
    },
  };
}
