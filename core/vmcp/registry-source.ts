/**
 * Where a registry-fed group reads its registry's entries: the registry server over HTTP (the
 * `url` of `MCPGroup.spec.registry`, what `gatehouse vmcp serve` uses), or any object of the same
 * shape given to `startVmcp` as `registrySource` (a registry in the same process, read without
 * HTTP: plugins/registry/in-process-source.ts).
 *
 * Over HTTP: `GET <url>/v1/registries/<name>/entries?limit=100[&cursor=…]`, the admin listing,
 * which is the one place the registry's API gives each entry's claims (the consumer API
 * `/{registry}/v0.1/servers` serves server.json documents only). It needs a token with the
 * registry's `manageRegistries` role (or `superAdmin`) that passes the registry's own claims
 * gate; the entries listed are those the token's claims may see. Each request is bounded in time
 * (what is left of the read's `timeout`) and in size (`maxResponseSize`, counted as the bytes
 * arrive, no compression asked for or decoded), the token goes to the registry's origin only,
 * and redirects are not followed.
 */
import { Buffer } from 'node:buffer';
import { Agent, request } from 'undici';
import type { RegistryFeedConfig } from '../config/vmcp-types.ts';
import { RegistryAnswerError, shown } from './registry-entries.ts';

/** Where the entries of one registry are read. */
export interface RegistrySource {
  /** What it is, for logs: `registry "default" at https://…`. */
  readonly label: string;
  /**
   * One page of the registry's entries from `cursor` (null: the first), as the admin listing
   * answers it (`{entries, metadata: {nextCursor}}`): the feed checks every part of it. Rejects
   * when it cannot be read; `signal` aborts it (the read's time bound, or the server stopping).
   */
  page(cursor: string | null, limit: number, signal: AbortSignal): Promise<unknown>;
  close?(): Promise<void>;
}

/** The error body of an answer, read only this far. */
const ERROR_BODY_BYTES = 4096;

/** `error` and `error_description` of a registry's error body, as a message may show them. */
function errorOf(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: unknown; error_description?: unknown };
    const parts = [parsed.error, parsed.error_description].filter((p) => typeof p === 'string').map((p) => shown(p));
    return parts.length === 0 ? '' : `: ${parts.join(' ')}`;
  } catch {
    return '';
  }
}

/** What an error status means for the gateway's reading, beyond what the registry says. */
function statusHint(status: number): string {
  if (status === 401) return ' (the token is missing, expired or not accepted: tokenSecretRef)';
  if (status === 403) return ' (the token needs the manageRegistries role, or superAdmin)';
  if (status === 404) return ' (no such registry, or the token does not satisfy its claims)';
  return '';
}

/** Reads up to `limit` bytes of `body`; over it, null (the rest is not read). */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export function httpRegistrySource(settings: RegistryFeedConfig): RegistrySource {
  const base = new URL(settings.url.endsWith('/') ? settings.url : `${settings.url}/`);
  const entries = new URL(`v1/registries/${encodeURIComponent(settings.name)}/entries`, base);
  const agent = new Agent({
    connect: { timeout: settings.timeoutMs },
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
    connections: 2,
  });
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'gatehouse-vmcp (registry feed)' };
  if (settings.token !== null) headers.authorization = `Bearer ${settings.token.value}`;
  const limit = settings.maxResponseBytes;

  async function page(cursor: string | null, size: number, signal: AbortSignal): Promise<unknown> {
    const url = new URL(entries);
    url.searchParams.set('limit', String(size));
    if (cursor !== null) url.searchParams.set('cursor', cursor);
    const res = await request(url, { dispatcher: agent, method: 'GET', headers, signal });
    // A body destroyed on purpose (over the bound) emits an error nobody else listens to.
    res.body.on('error', () => undefined);
    const status = res.statusCode;
    if (status < 200 || status > 299) {
      const body = status >= 300 && status < 400 ? null : await readBounded(res.body, ERROR_BODY_BYTES).catch(() => null);
      if (body === null) res.body.destroy();
      const where = status >= 300 && status < 400 ? `: redirected to ${shown(res.headers.location ?? '')}, not followed (the token goes to ${base.origin} only)` : errorOf(body ?? Buffer.alloc(0));
      throw new RegistryAnswerError(`the registry answered ${status}${where}${statusHint(status)}`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      res.body.destroy();
      throw new RegistryAnswerError(`the answer is ${declared} bytes, over maxResponseSize (${limit} bytes a page)`);
    }
    const body = await readBounded(res.body, limit);
    if (body === null) throw new RegistryAnswerError(`the answer is over maxResponseSize (${limit} bytes a page)`);
    try {
      return JSON.parse(body.toString('utf8')) as unknown;
    } catch {
      throw new RegistryAnswerError(`the answer is not JSON (${body.length} bytes)`);
    }
  }

  return { label: `registry ${shown(settings.name)} at ${base.origin}${base.pathname}`, page, close: () => agent.close() };
}
