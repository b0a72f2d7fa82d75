/**
 * Composes a running virtual MCP server from its resolved config on the application lifecycle
 * (app.ts): plugins and chain, connection pools, the MCP endpoint (transparent for one backend,
 * aggregated for a group) and the HTTP server. The composition root (the CLI, or a user's own
 * code) decides which plugins run; this file knows no identity provider.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { backendInfo, type BackendInfo } from './backend.ts';
import { App } from './app.ts';
import type { VmcpConfig } from './config/vmcp-types.ts';
import type { McpEndpoint } from './mcp/mcp-endpoint.ts';
import { TransparentEndpoint } from './mcp/transparent-endpoint.ts';
import { OpenStreams } from './mcp/streams.ts';
import { createAggregated } from './mcp/aggregate/compose.ts';
import { needsAggregation } from './mcp/aggregate/config.ts';
import { createLogger } from './observe/log.ts';
import { GatewayMetrics } from './observe/metrics.ts';
import { importPlugin, type PluginSpec } from './plugin-loader.ts';
import { listenerOptions, type GatewayServer } from './gateway-server.ts';
import { httpUrlOf } from './http/address.ts';
import { Upstreams, type UpstreamOptions } from './upstream/upstreams.ts';

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
  /** Limits of the connections to each backend (defaults in upstream/upstreams.ts). */
  upstreams?: Partial<UpstreamOptions>;
}

export interface RunningVmcp {
  /** URL of the MCP endpoint on the bound address. */
  readonly url: string;
  readonly address: AddressInfo;
  readonly server: GatewayServer;
  readonly backends: readonly BackendInfo[];
  stop(): Promise<void>;
}

function mcpPathOf(config: VmcpConfig): string {
  const resourceUrl = config.incomingAuth.resourceUrl;
  return resourceUrl === null ? '/mcp' : new URL(resourceUrl).pathname;
}

export async function startVmcp(options: StartVmcpOptions): Promise<RunningVmcp> {
  const { config } = options;
  const app = new App({ log: options.log ?? createLogger(), metrics: options.metrics ?? new GatewayMetrics() });
  const { log, metrics } = app;
  try {
    const backends = config.backends.map((b) => backendInfo(b.name, b.url, b.timeoutMs, b.externalAuth));
    const mcpPath = mcpPathOf(config);

    // Plugins: built-ins first (incoming auth is the first phase of everything), then the config's, then code's.
    const fromConfig: PluginSpec[] = [];
    for (const ref of config.plugins) {
      fromConfig.push({ definition: await importPlugin(ref.module, ref.yamlPath), config: ref.config, source: ref.yamlPath });
    }
    const chain = await app.plugins([...(options.builtins ?? []), ...fromConfig, ...(options.plugins ?? [])], { mcpPath, backends, configDir: config.dir });

    const upstreams = app.own(new Upstreams(options.upstreams), (u) => u.close(), 'backend connections');
    const streams = new OpenStreams(metrics);
    const transparent = !needsAggregation(backends.length, config.aggregation);
    // A transparent endpoint has one too, of its one backend under its own names: it serves the
    // requests whose generation of MCP is not the backend's, and checks the backend's health.
    const aggregated = app.own(
      await createAggregated({
        config: transparent ? { ...config, aggregation: { ...config.aggregation, conflictResolution: 'priority' } } : config,
        path: mcpPath,
        backends,
        upstreams,
        chain,
        metrics,
        streams,
        log,
      }),
      (a) => a.close(),
      transparent ? 'era bridge' : 'aggregated sessions',
    );
    const endpoint: McpEndpoint = app.own(
      transparent
        ? new TransparentEndpoint({
            path: mcpPath,
            bridge: app.own(aggregated.endpoint, (e) => e.close(), 'era bridge endpoint'),
            backend: backends[0]!,
            upstreams,
            chain,
            metrics: metrics.backend(backends[0]!.name),
            streams,
            maxBodyBytes: config.server.maxBodyBytes,
          })
        : aggregated.endpoint,
      (e) => e.close(),
      'MCP endpoint',
    );
    const server = app.serve({
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 4483,
      mcp: endpoint,
      shutdown: [streams],
      publicUrls: [config.incomingAuth.resourceUrl, config.authServer?.issuer].filter((u): u is string => typeof u === 'string'),
      ...listenerOptions(config.server),
    });
    app.onStart(() => aggregated.health.start());

    const address = await app.start();
    const url = app.url(mcpPath);
    const admin = server.adminAddress;
    log.info(
      {
        url,
        mode: transparent ? 'transparent' : 'aggregated',
        backends: backends.map((b) => `${b.name}=${b.url.href}`),
        ...(admin === null ? {} : { admin: httpUrlOf(admin) }),
      },
      'virtual MCP server listening',
    );
    return { url, address, server, backends, stop: () => app.stop() };
  } catch (err) {
    await app.stop();
    throw err;
  }
}
