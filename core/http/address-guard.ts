/**
 * Which addresses an outbound connection whose destination someone else chose may reach. A JWKS
 * URL comes from a document served by someone else, a peer registry's from an admin API caller,
 * a registry-fed backend's from a publisher: without a guard a hostile or compromised one could
 * aim the gateway at internal services (SSRF). What an address is comes from address-class.ts;
 * this file is the policy of the outbound fetches (`AddressPolicy`: the incoming auth's issuer
 * fetches, the registry's API and git sources) and the `lookup` that enforces a policy on a
 * socket (`filteredLookup`, which upstream/endpoint-guard.ts uses for backends too).
 *
 * The check runs on the resolved addresses at connect time (a `lookup` for the socket), so a
 * DNS answer cannot swap a public name for a private address after a check.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { addressClass } from './address-class.ts';

export function isLoopbackAddress(address: string): boolean {
  return addressClass(address) === 'loopback';
}

/** Private, link-local, unique-local, metadata, multicast, unspecified and other non-public ranges (loopback excluded). */
export function isPrivateAddress(address: string): boolean {
  const kind = addressClass(address);
  return kind !== null && kind !== undefined && kind !== 'loopback';
}

/** localhost, 127.0.0.0/8, ::1: the hosts on which plain http is allowed for an issuer. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || isLoopbackAddress(hostname);
}

/** What the outbound fetches of the plugins may reach. */
export interface AddressPolicy {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
  /** How to allow a refused address, for the message (default: the issuer's `jwksAllowPrivateIP`). */
  readonly hint?: string;
}

/** Why `address` may not be connected to under `policy`, or null when it may. */
export function refusedAddress(address: string, policy: AddressPolicy): string | null {
  const kind = addressClass(address);
  if (kind === null || kind === undefined) return null;
  if (kind === 'loopback') return policy.allowLoopback || policy.allowPrivate ? null : `${address} is a loopback address${policy.hint === undefined ? '' : ` (${policy.hint})`}`;
  return policy.allowPrivate ? null : `${address} is a private or non-public address (${policy.hint ?? 'set jwksAllowPrivateIP to allow it'})`;
}

export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** `dns.lookup`'s shape, as net and tls sockets (and undici's `connect`) take it. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * Why none of a name's addresses may be connected to: `refusal` of its first one. `code` is
 * `EADDRREFUSED`; what a socket's `error` event gives when its lookup refused.
 */
export type RefusalError = (hostname: string, address: string, refusal: string, addresses: number) => NodeJS.ErrnoException;

const refusingToConnect: RefusalError = (hostname, _address, refusal) => {
  const error: NodeJS.ErrnoException = new Error(`refusing to connect to ${hostname}: ${refusal}`);
  error.code = 'EADDRREFUSED';
  return error;
};

/**
 * A `lookup` for net/tls sockets that resolves with `resolve` (dns.lookup by default), drops the
 * addresses `refuse` gives a reason for, and fails with `error` when none is left.
 */
export function filteredLookup(refuse: (address: string) => string | null, resolve: LookupFunction = dnsLookup as LookupFunction, error: RefusalError = refusingToConnect): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, found) => {
      if (err !== null) return callback(err, []);
      const addresses = typeof found === 'string' ? [{ address: found, family: isIP(found) }] : found;
      const allowed = addresses.filter((a) => refuse(a.address) === null);
      if (allowed.length === 0) {
        const first = addresses[0]?.address;
        if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        return callback(error(hostname, first, refuse(first)!, addresses.length), []);
      }
      if (options.all === true) return callback(null, allowed);
      const chosen = allowed[0]!;
      callback(null, chosen.address, chosen.family);
    });
  };
}

/** A `lookup` for net/tls sockets that drops the addresses `policy` refuses and fails when none is left. */
export function guardedLookup(policy: AddressPolicy): LookupFunction {
  return filteredLookup((address) => refusedAddress(address, policy));
}
