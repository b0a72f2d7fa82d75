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

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b:1::', 48],
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `::ffff:10.0.0.1` → `10.0.0.1`; other addresses unchanged. */
function unmapped(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : address;
}

export function isLoopbackAddress(address: string): boolean {
  const a = unmapped(address);
  const family = isIP(a);
  return family !== 0 && LOOPBACK.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** Private, link-local, unique-local, multicast, unspecified and other non-public ranges (loopback excluded). */
export function isPrivateAddress(address: string): boolean {
  const a = unmapped(address);
  const family = isIP(a);
  return family !== 0 && PRIVATE.check(a, family === 4 ? 'ipv4' : 'ipv6');
}

/** localhost, 127.0.0.0/8, ::1: the hosts on which plain http is allowed for an issuer. */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return bare === 'localhost' || isLoopbackAddress(bare);
}

export interface AddressPolicy {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
}

/** Why `address` may not be connected to under `policy`, or null when it may. */
export function refusedAddress(address: string, policy: AddressPolicy): string | null {
  if (isLoopbackAddress(address)) return policy.allowLoopback || policy.allowPrivate ? null : `${address} is a loopback address`;
  if (isPrivateAddress(address)) return policy.allowPrivate ? null : `${address} is a private or non-public address (set jwksAllowPrivateIP to allow it)`;
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
