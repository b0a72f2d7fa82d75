/**
 * DNS-rebinding protection, as the MCP transport specification requires of servers: the `Host`
 * header must name this gateway (its listening addresses, the host of `resourceUrl`, or a
 * configured extra host), and a browser's `Origin`, when present, must be one of the gateway's
 * own origins or a configured one. Anything else is refused with 403 before any other work.
 */
import { networkInterfaces } from 'node:os';
import { GatewayError } from '../base/errors.ts';
import { bracketHost } from './address.ts';
import type { RequestHead } from './request-head.ts';

export interface OriginGuardOptions {
  /** The address the server is bound to (as given to listen) and the port it got. */
  host: string;
  port: number;
  /** Externally reachable URLs of this server (resourceUrl, issuer): their hosts are its own. */
  publicUrls: readonly string[];
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
}

const WILDCARD_BIND = new Set(['0.0.0.0', '::', '']);

/** Every `host[:port]` form a client may put in `Host` to reach this server. */
function ownHosts(options: OriginGuardOptions): Set<string> {
  const names = new Set<string>(['localhost', '127.0.0.1', '[::1]']);
  if (WILDCARD_BIND.has(options.host)) {
    for (const list of Object.values(networkInterfaces())) {
      for (const iface of list ?? []) names.add(bracketHost(iface.address.toLowerCase()));
    }
  } else {
    names.add(bracketHost(options.host.toLowerCase()));
  }
  const hosts = new Set<string>();
  for (const name of names) {
    hosts.add(`${name}:${options.port}`);
    if (options.port === 80 || options.port === 443) hosts.add(name);
  }
  for (const raw of options.publicUrls) {
    const url = new URL(raw);
    const defaultPort = url.protocol === 'https:' ? '443' : '80';
    hosts.add(url.host.toLowerCase());
    hosts.add(`${url.hostname.toLowerCase()}:${url.port || defaultPort}`);
  }
  for (const host of options.allowedHosts) hosts.add(host.toLowerCase());
  return hosts;
}

export class OriginGuard {
  readonly #hosts: Set<string>;
  readonly #origins: Set<string>;
  readonly #anyHost: boolean;
  readonly #anyOrigin: boolean;

  constructor(options: OriginGuardOptions) {
    this.#hosts = ownHosts(options);
    this.#anyHost = options.allowedHosts.includes('*');
    this.#anyOrigin = options.allowedOrigins.includes('*');
    this.#origins = new Set(options.allowedOrigins.map((o) => o.toLowerCase().replace(/\/+$/, '')));
    for (const host of this.#hosts) {
      this.#origins.add(`http://${host}`);
      this.#origins.add(`https://${host}`);
    }
  }

  /** Null when the request may proceed; the 403 otherwise. */
  check(head: Pick<RequestHead, 'host' | 'origin'>): GatewayError | null {
    const host = head.host;
    // Looked up as sent first: clients send the host they were given, mostly in lower case.
    if (host !== undefined && !this.#anyHost && !this.#hosts.has(host) && !this.#hosts.has(host.toLowerCase())) {
      return new GatewayError('forbidden_host', `Host "${host}" is not a name of this gateway`, {
        detail: 'add it to spec.server.allowedHosts if the gateway is reached under that name',
      });
    }
    const origin = head.origin;
    if (origin !== undefined && !this.allowsOrigin(origin)) {
      return new GatewayError('forbidden_origin', `Origin "${origin}" is not allowed`, {
        detail: 'add it to spec.server.allowedOrigins to let that web origin call the gateway',
      });
    }
    return null;
  }

  allowsOrigin(origin: string): boolean {
    return this.#anyOrigin || this.#origins.has(origin.toLowerCase());
  }
}
