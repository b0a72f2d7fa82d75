/** Writing a bound address into a URL or a `Host` value: an IPv6 literal goes in brackets. */
import type { AddressInfo } from 'node:net';

/** `address` as the host part of a URL (`::1` → `[::1]`). */
export function bracketHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/** `http://host:port<path>` of a bound address. */
export function httpUrlOf(address: AddressInfo, path = ''): string {
  return `http://${bracketHost(address.address)}:${address.port}${path}`;
}
