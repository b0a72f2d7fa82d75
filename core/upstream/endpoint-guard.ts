/**
 * The addresses a registry-fed backend may be reached at. A publisher chose its URL, so without a
 * guard it could aim the gateway at the cloud's metadata service, the gateway's own loopback
 * ports or the cluster's private services (SSRF). `MCPGroup.spec.registry` says what is allowed
 * (EndpointPolicy): public addresses; private ones too with `allowPrivateEndpoint` (ToolHive's
 * name and meaning: RFC 1918, 100.64.0.0/10 and fc00::/7; loopback, link-local and metadata
 * addresses stay refused); and any range listed in `allowedEndpointCIDRs`, whatever its class.
 *
 * Checked on the address actually dialled, at every connect of the backend's pools (pool.ts,
 * backend-connection.ts), so a DNS answer that changes between two connects (rebinding) is
 * judged again each time:
 *  - a URL whose host is an IP address is judged when its pool is made: a refused one never
 *    opens a socket, and every request to it fails at once;
 *  - a host name is resolved by the socket's `lookup`, which keeps only the allowed addresses
 *    (none left: the connect fails, and nothing was sent anywhere);
 *  - once connected, the socket's remote address is judged again before the request is written
 *    (a second line: the lookup let only allowed addresses through; over https the TLS hello,
 *    which carries no more than the host name, may already be on its way).
 * A refusal is the backend's error (backend_unavailable, naming the class of address and the field
 * that would allow it, not the address), which the health monitor counts as the backend being down;
 * the log says it with the address, once per backend and class of address.
 *
 * The file's MCPServers have no policy, and their pools no guard: they pay nothing for it.
 */
import type { Logger } from 'pino';
import { lookup as dnsLookup } from 'node:dns';
import { addressBytes, classOfBytes, CLASS_PHRASE, inCidr, parseCidr, type AddressClass, type Cidr } from '../http/address-class.ts';
import { filteredLookup, type LookupFunction } from '../http/address-guard.ts';
import type { EndpointPolicy } from '../plugin-api/backend.ts';
import { UpstreamError, type DialGuard } from './backend-connection.ts';

/** A connect the guard refused: `message` names the address (for the log), `reason` does not (for the client). */
export class AddressRefusedError extends UpstreamError {
  readonly address: string;
  readonly addressClass: AddressClass | 'not an address';
  /** The class of address and what would allow it, without the address. */
  readonly reason: string;

  constructor(message: string, address: string, addressClass: AddressClass | 'not an address', reason: string) {
    super('EADDRREFUSED', message);
    this.address = address;
    this.addressClass = addressClass;
    this.reason = reason;
  }
}

/** Why an address is refused: its class and what would allow it. */
interface Refusal {
  readonly kind: AddressClass | 'not an address';
  readonly reason: string;
}

export class EndpointGuard implements DialGuard {
  readonly lookup: LookupFunction;
  readonly #backend: string;
  readonly #policy: EndpointPolicy;
  readonly #cidrs: readonly Cidr[];
  readonly #log: Logger | null;
  /** Where an address is read to be judged (none of it is kept). */
  readonly #scratch = new Uint8Array(16);
  /** The classes of address already logged for this backend: each is logged once. */
  readonly #logged = new Set<string>();

  /** `resolve`: how host names are resolved (dns.lookup by default); its answers are filtered here. */
  constructor(backend: string, policy: EndpointPolicy, log: Logger | null, resolve: LookupFunction = dnsLookup as LookupFunction) {
    this.#backend = backend;
    this.#policy = policy;
    // Checked by the configuration's schema; a range that does not parse allows nothing.
    this.#cidrs = policy.allowedCidrs.map(parseCidr).filter((c): c is Cidr => typeof c !== 'string');
    this.#log = log;
    this.lookup = filteredLookup(
      (address) => this.#refusal(address)?.reason ?? null,
      resolve,
      (host, address, _reason, addresses) => this.#refused(`(${host}) resolves to`, address, addresses),
    );
  }

  /** The refusal of a connect to `address` (the pool's IP-literal host, or a connected socket's remote address), or null. */
  check(address: string, host: string): UpstreamError | null {
    if (this.#refusal(address) === null) return null;
    return this.#refused(address === host ? 'is at' : `(${host}) connected to`, address, 1);
  }

  /** Why `address` may not be dialled under the policy, or null. */
  #refusal(address: string): Refusal | null {
    const bytes = addressBytes(address, this.#scratch);
    if (bytes === null) return { kind: 'not an address', reason: 'not an IP address' };
    const kind = classOfBytes(bytes);
    if (kind === null || (kind === 'private' && this.#policy.allowPrivate)) return null;
    for (const cidr of this.#cidrs) if (inCidr(bytes, cidr)) return null;
    const where = this.#policy.where;
    const hint = kind === 'private' ? `${where}.allowPrivateEndpoint is off` : `only ${where}.allowedEndpointCIDRs can allow it`;
    return { kind, reason: `${CLASS_PHRASE[kind]}: ${hint}` };
  }

  /** The error of a refused connect (`verb`: how the backend came to `address`), logged once per class of address. */
  #refused(verb: string, address: string, addresses: number): AddressRefusedError {
    const refusal = this.#refusal(address) ?? { kind: 'not an address' as const, reason: 'not an IP address' };
    const others = addresses > 1 ? ` (and ${addresses - 1} more address${addresses > 2 ? 'es' : ''}, refused too)` : '';
    const message = `backend "${this.#backend}" ${verb} ${address}${others}, ${refusal.reason}`;
    if (this.#log !== null && !this.#logged.has(refusal.kind)) {
      this.#logged.add(refusal.kind);
      this.#log.warn({ backend: this.#backend, address, addressClass: refusal.kind }, `${message}; the gateway does not connect to it`);
    }
    return new AddressRefusedError(message, address, refusal.kind, refusal.reason);
  }
}
