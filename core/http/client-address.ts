/**
 * Who a request comes from, for per-client limits and logs. Behind a load balancer every socket
 * is the balancer's: with `server.trustedProxies` (addresses or CIDR ranges) a request whose
 * socket is one of them is attributed to the address its `X-Forwarded-For` names, read from the
 * right (the nearest hop) past every trusted proxy, so that a client cannot pick its own address
 * by sending the header itself. Without trusted proxies the header is ignored.
 */
import { BlockList, isIP } from 'node:net';

/** An IPv4 address written as IPv4-mapped IPv6 (`::ffff:10.0.0.1`), as a dual-stack socket reports it. */
const MAPPED_V4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

function plain(address: string): string {
  return MAPPED_V4.exec(address)?.[1] ?? address;
}

/** `address` (or `address/bits`) as a BlockList entry; null when it is neither. */
export function parseRange(value: string): { address: string; bits: number; family: 'ipv4' | 'ipv6' } | null {
  const slash = value.indexOf('/');
  const address = slash === -1 ? value : value.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return null;
  const max = version === 4 ? 32 : 128;
  const suffix = slash === -1 ? String(max) : value.slice(slash + 1);
  const bits = /^\d{1,3}$/.test(suffix) ? Number(suffix) : -1;
  if (bits < 0 || bits > max) return null;
  return { address, bits, family: version === 4 ? 'ipv4' : 'ipv6' };
}

export class ClientAddresses {
  readonly #trusted: BlockList | null;

  /** `ranges`: validated by the config (parseRange); an empty list trusts no proxy. */
  constructor(ranges: readonly string[]) {
    if (ranges.length === 0) {
      this.#trusted = null;
      return;
    }
    const list = new BlockList();
    for (const value of ranges) {
      const range = parseRange(value);
      if (range === null) throw new Error(`not an address or CIDR range: ${value}`);
      list.addSubnet(range.address, range.bits, range.family);
    }
    this.#trusted = list;
  }

  #isTrusted(address: string): boolean {
    const version = isIP(address);
    return version !== 0 && this.#trusted!.check(address, version === 4 ? 'ipv4' : 'ipv6');
  }

  /** The client's address: the socket's, or past trusted proxies the nearest untrusted hop they name. */
  of(socketAddress: string | undefined, forwardedFor: string | undefined): string {
    const socket = plain(socketAddress ?? 'unknown');
    if (this.#trusted === null || forwardedFor === undefined || !this.#isTrusted(socket)) return socket;
    let client = socket;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i]!.trim());
      // Something that is not an address: whoever added it is not to be believed past here.
      if (isIP(hop) === 0) return client;
      client = hop;
      if (!this.#isTrusted(hop)) return hop;
    }
    return client;
  }
}

/** The key of a client address for a per-client limit: an IPv6 address by its /64 (one subscriber's prefix). */
export function limitKey(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = expandV6(address);
  return groups === null ? address : `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, each without leading zeros; null when it is not one. */
function expandV6(address: string): string[] | null {
  const zone = address.indexOf('%');
  const bare = zone === -1 ? address : address.slice(0, zone);
  const [head, tail] = bare.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  // A trailing embedded IPv4 (::ffff:1.2.3.4) counts as two groups; the /64 prefix does not include it.
  const count = (parts: string[]): number => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const missing = 8 - count(left) - count(right);
  if (tail === undefined ? missing !== 0 : missing < 0) return null;
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill('0'), ...right];
  return groups.map((g) => (g.includes('.') ? g : (parseInt(g, 16) || 0).toString(16)));
}
