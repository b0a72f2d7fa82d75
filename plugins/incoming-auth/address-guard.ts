/**
 * Which addresses the issuer fetches (discovery, JWKS, introspection) may connect to. A JWKS URL
 * comes from a document served by someone else, so without a guard a hostile or compromised
 * discovery document could aim the gateway at internal services (SSRF). Private, link-local and
 * unique-local addresses are refused unless the issuer is configured to allow them
 * (`jwksAllowPrivateIP`, and always for the cluster issuer); loopback is allowed only when the
 * issuer itself is a loopback URL (local development and tests).
 *
 * The check runs on the resolved addresses at connect time (a `lookup` for the socket), so a
 * DNS answer cannot swap a public name for a private address after a check.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** IPv4 ranges that are not public (loopback is its own case). */
const PRIVATE_V4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE_V4.addSubnet(net, bits, 'ipv4');
}

/** IPv6 ranges that are not public, besides those that carry an IPv4 address (checked as that address). */
const PRIVATE_V6 = new BlockList();
for (const [net, bits] of [
  ['::', 128], // unspecified
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: tunnels to addresses it does not show
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link local
  ['fec0::', 10], // site local (deprecated, still routed privately)
  ['ff00::', 8], // multicast
] as const) {
  PRIVATE_V6.addSubnet(net, bits, 'ipv6');
}

const LOOPBACK_V4 = new BlockList();
LOOPBACK_V4.addSubnet('127.0.0.0', 8, 'ipv4');

/** The 16 bytes of an IPv6 address in text form (with `::` and a trailing dotted quad), or null. */
function ipv6Bytes(address: string): Uint8Array | null {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const groups: number[] = [];
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted !== null) {
    const parts = dotted[1]!.split('.').map(Number);
    if (parts.some((p) => p > 255)) return null;
    tail = [(parts[0]! << 8) | parts[1]!, (parts[2]! << 8) | parts[3]!];
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (half: string): number[] | null => (half === '' ? [] : half.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if (head === null || rest === null || [...head, ...rest].some(Number.isNaN)) return null;
  const missing = 8 - head.length - rest.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  groups.push(...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...rest, ...tail);
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

const dottedQuad = (b: Uint8Array, at: number): string => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

/**
 * The IPv4 address an IPv6 address stands for, when it is one of the forms that reach an IPv4
 * host: IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and
 * 6to4 (2002::/16). Such an address is as private as the IPv4 address it carries.
 */
function carriedIpv4(address: string): string | null {
  const b = ipv6Bytes(address);
  if (b === null) return null;
  const zeros = (from: number, to: number): boolean => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return dottedQuad(b, 12);
  if (zeros(0, 12) && !zeros(12, 16) && !(zeros(12, 15) && b[15] === 1)) return dottedQuad(b, 12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return dottedQuad(b, 12);
  if (b[0] === 0x20 && b[1] === 0x02) return dottedQuad(b, 2);
  return null;
}

/** The address to classify: an IPv4 one for the IPv6 forms that carry it, else itself. */
function effective(address: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  const family = isIP(address);
  if (family === 4) return { address, family: 'ipv4' };
  if (family !== 6) return null;
  const v4 = carriedIpv4(address);
  return v4 === null ? { address, family: 'ipv6' } : { address: v4, family: 'ipv4' };
}

export function isLoopbackAddress(address: string): boolean {
  const a = effective(address);
  if (a === null) return false;
  return a.family === 'ipv4' ? LOOPBACK_V4.check(a.address, 'ipv4') : ipv6Bytes(a.address)?.every((x, i) => x === (i === 15 ? 1 : 0)) === true;
}

/** Private, link-local, unique-local, multicast, unspecified and other non-public ranges (loopback excluded). */
export function isPrivateAddress(address: string): boolean {
  const a = effective(address);
  if (a === null) return false;
  return a.family === 'ipv4' ? PRIVATE_V4.check(a.address, 'ipv4') : PRIVATE_V6.check(a.address, 'ipv6');
}

/** localhost, 127.0.0.0/8, ::1: the hosts on which plain http is allowed for an issuer. */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return bare === 'localhost' || isLoopbackAddress(bare);
}

export interface AddressPolicy {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
  /** How to allow a refused address, for the message (default: the issuer's `jwksAllowPrivateIP`). */
  readonly hint?: string;
}

/** Why `address` may not be connected to under `policy`, or null when it may. */
export function refusedAddress(address: string, policy: AddressPolicy): string | null {
  if (isLoopbackAddress(address)) return policy.allowLoopback || policy.allowPrivate ? null : `${address} is a loopback address${policy.hint === undefined ? '' : ` (${policy.hint})`}`;
  if (isPrivateAddress(address)) return policy.allowPrivate ? null : `${address} is a private or non-public address (${policy.hint ?? 'set jwksAllowPrivateIP to allow it'})`;
  return null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net/tls sockets that drops refused addresses and fails when none is left. */
export function guardedLookup(policy: AddressPolicy): (hostname: string, options: LookupOptions, callback: LookupCallback) => void {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, []);
      const allowed = addresses.filter((a) => refusedAddress(a.address, policy) === null);
      if (allowed.length === 0) {
        const reason = addresses.length > 0 ? refusedAddress(addresses[0]!.address, policy) : 'no address';
        const error: NodeJS.ErrnoException = new Error(`refusing to connect to ${hostname}: ${reason}`);
        error.code = 'EADDRREFUSED';
        return callback(error, []);
      }
      if (options.all === true) return callback(null, allowed);
      const first = allowed[0]!;
      callback(null, first.address, first.family);
    });
  };
}
