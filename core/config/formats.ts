/**
 * The zod building blocks both config files share (vMCP and registry): how problems are added
 * with their YAML position hint, and the formats (URLs, issuers, hosts, origins, unique names).
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import type { PathSegment } from './problems.ts';
import { isMapping } from './yaml.ts';
import { parseRange } from '../http/client-address.ts';

export type Ctx = z.core.$RefinementCtx;

/** Checks on an object run even when some of its fields are invalid, as long as it is a mapping. */
export const whenMapping = { when: (payload: z.core.ParsePayload) => isMapping(payload.value) };

export const q = (text: string): string => JSON.stringify(text);

/** Adds a problem at `path`; `at` says whether the YAML key or value is pointed at. */
export function addIssue(ctx: Ctx, path: PathSegment[], message: string, at: 'key' | 'value' = 'value'): void {
  ctx.addIssue({ code: 'custom', path, message, params: { at } });
}

export const text = z.string().min(1);

export function parseUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

/** An absolute http(s) URL; `example` shows what one looks like in this place. */
export function httpUrlSchema(example: string) {
  return z.string().superRefine((value, ctx) => {
    const url = parseUrl(value);
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      ctx.addIssue(`must be an absolute http(s) URL such as ${example} (got ${q(value)})`);
    }
  });
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Issuers and token endpoints are https, except on loopback hosts (local development and tests), without credentials, query or fragment. */
export const issuerUrl = z.string().superRefine((value, ctx) => {
  const url = parseUrl(value);
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    ctx.addIssue(`must be an absolute https URL (got ${q(value)})`);
  } else if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    ctx.addIssue(`must use https: plain http is allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1) (got ${q(value)})`);
  } else if (url.username !== '' || url.password !== '') {
    // Not echoed: the value holds a credential.
    ctx.addIssue('must not carry a user name or password: client credentials belong in a Secret (clientSecretRef)');
  } else if (url.search !== '' || url.hash !== '') {
    ctx.addIssue(`must not have a query or a fragment (got ${q(value)})`);
  }
});

const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:\d{1,5})?$/;

export const allowedHost = z.string().superRefine((value, ctx) => {
  if (value !== '*' && !HOST.test(value)) {
    ctx.addIssue(`must be a host name, optionally with :port (for example mcp.example.com or mcp.example.com:8443), or "*" (got ${q(value)})`);
  }
});

/** A host name to listen on (an IP address is checked with isIP). */
const LISTEN_HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/**
 * `server.admin`: the listener of /status and /metrics (and the probes), loopback unless an
 * address is given: it answers without authentication.
 */
export const adminListener = z.strictObject({
  address: z
    .string()
    .superRefine((value, ctx) => {
      if (isIP(value) === 0 && !LISTEN_HOST_NAME.test(value)) ctx.addIssue(`must be an IP address or a host name to listen on, without a port (got ${q(value)})`);
    })
    .default('127.0.0.1'),
  port: z.int().min(0).max(65535),
});

export const allowedOrigin = z.string().superRefine((value, ctx) => {
  const url = parseUrl(value);
  const isOrigin = url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value;
  if (value !== '*' && !isOrigin) {
    ctx.addIssue(`must be an origin: scheme, host and optional port without a path, for example https://app.example.com, or "*" (got ${q(value)})`);
  }
});

/** An IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`): a proxy whose X-Forwarded-For is believed. */
export const trustedProxy = z.string().superRefine((value, ctx) => {
  if (parseRange(value) === null) ctx.addIssue(`must be an IP address or a CIDR range, for example 10.0.0.0/8 or fd00::/8 (got ${q(value)})`);
});

/** Each item's `name` is unique (checked even when some items are invalid). */
export function uniqueNames<T extends z.ZodType>(what: string, items: z.ZodArray<T>) {
  return items.superRefine(
    (list: unknown[], ctx) => {
      const seen = new Map<string, number>();
      list.forEach((item, index) => {
        const name = isMapping(item) ? item.name : undefined;
        if (typeof name !== 'string') return;
        const first = seen.get(name);
        if (first === undefined) seen.set(name, index);
        else addIssue(ctx, [index, 'name'], `duplicate ${what} name ${q(name)}: names must be unique (first used at [${first}])`);
      });
    },
    { when: (payload) => Array.isArray(payload.value) },
  );
}
