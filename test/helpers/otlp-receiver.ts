/**
 * An OTLP/HTTP receiver in the test's own process: a plain node:http server on loopback that
 * takes the exporter's JSON exports (`POST /v1/traces`, `POST /v1/metrics`) and keeps the spans
 * decoded: ids as hex, attributes as plain values, parent links, kinds.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error. */
  readonly status: number;
  readonly service: string;
  readonly startNs: bigint;
  readonly endNs: bigint;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  return value.doubleValue;
}

function attributesOf(list: { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = valueOf(value);
  return out;
}

export interface OtlpReceiver {
  /** host:port, as the telemetry section's `endpoint` takes it. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** The raw metric exports. */
  readonly metrics: unknown[];
  /** Every request's path and content type. */
  readonly requests: { path: string; contentType: string | undefined; headers: Record<string, unknown> }[];
  close(): Promise<void>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function decodeTraces(body: any, spans: ReceivedSpan[]): void {
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          status: span.status?.code ?? 0,
          service,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
        });
      }
    }
  }
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: unknown[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'], headers: { ...req.headers } });
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (req.url === '/v1/traces') decodeTraces(body, spans);
        else if (req.url === '/v1/metrics') metrics.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      } catch {
        res.writeHead(400);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `127.0.0.1:${port}`,
    spans,
    metrics,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
