/**
 * The rows that measure telemetry (spec.config.telemetry), next to the anonymous row of the same
 * run: a `telemetry` section that enables nothing (the target: ≤ 1.01 × the anonymous
 * row, since nothing subscribes to the seam then), and tracing on at sampling rate 1, every
 * request a span, its backend call a span, exported over OTLP/HTTP to a sink in this process
 * that answers 200 and keeps nothing (the export's own CPU is the gateway's, as in production).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { anonymousConfig, startGatehouse, type GatehouseConfigContext } from './gatehouse.ts';
import type { Row } from './target.ts';

/** An OTLP/HTTP collector that takes every export and drops it. */
async function startSink(): Promise<{ endpoint: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { endpoint: `127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The anonymous vMCP with `telemetry` (flow style) under spec.config. */
function withTelemetry(telemetry: string) {
  return (ctx: GatehouseConfigContext): string => anonymousConfig(ctx).replace('  config: {groupRef: bench}', `  config: {groupRef: bench, telemetry: ${telemetry}}`);
}

export function telemetryRows(): Row[] {
  return [
    {
      name: 'gatehouse (anonymous, telemetry section, tracing off)',
      role: 'subject',
      start: (ctx) => startGatehouse(ctx, { label: 'telemetry-off', config: withTelemetry('{tracingEnabled: false, metricsEnabled: false}') }),
    },
    {
      name: 'gatehouse (anonymous, tracing on, sampling 1)',
      role: 'subject',
      async start(ctx) {
        const sink = await startSink();
        const closeSink = (): Promise<void> => new Promise((resolve) => sink.server.close(() => resolve()));
        try {
          const config = withTelemetry(`{endpoint: "${sink.endpoint}", insecure: true, tracingEnabled: true, samplingRate: 1}`);
          const target = await startGatehouse(ctx, { label: 'tracing-on', config });
          return {
            ...target,
            stop: async () => {
              await target.stop();
              await closeSink();
            },
          };
        } catch (err) {
          await closeSink();
          throw err;
        }
      },
    },
  ];
}
