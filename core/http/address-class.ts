/**
 * What kind of IP address an address is: public (globally reachable), or one of the classes an
 * outbound connection chosen by someone else must not reach unasked (loopback, link-local,
 * private, cloud metadata...). The one classifier of the gateway: the address guards of its
 * outbound fetches (address-guard.ts) and of its registry-fed backends (upstream/endpoint-guard.ts)
 * both ask it, and so does the check of a CIDR list in a configuration.
 *
 * Every address is read into 16 bytes, an IPv4 address as IPv4-mapped (`::ffff:a.b.c.d`), so an
 * IPv4 range and its mapped form are one range. IPv6 forms that reach an IPv4 host (mapped,
 * IPv4-compatible `::a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are
 * judged as the IPv4 address they carry: `::ffff:7f00:1` is loopback, `64:ff9b::a9fe:a9fe` is the
 * metadata address. Parsing is plain JavaScript on the address's characters (no BlockList, no
 * regular expression): it runs on every connect of a guarded backend (bench/core/http/address-class.bench.ts).
 */

/** Why an address is not a public one; a public (globally reachable) address has none (null). */
export type AddressClass = 'loopback' | 'unspecified' | 'link-local' | 'private' | 'metadata' | 'multicast' | 'reserved';

/** How a message names each class ("10.0.0.5, a private address"). */
export const CLASS_PHRASE: Readonly<Record<AddressClass, string>> = {
  loopback: 'a loopback address',
  unspecified: 'an unspecified address (this host)',
  'link-local': 'a link-local address',
  private: 'a private address',
  metadata: 'a cloud metadata address',
  multicast: 'a multicast address',
  reserved: 'a reserved address (not globally routable)',
};

/** Where the 0xffff of an IPv4-mapped address is (bytes 10 and 11; the ten before are zero). */
const MAPPED_FF = 10;

/** Reads a dotted quad (no leading zeros, as Node and the URL parser write one) into `out` at `at`. */
function readIpv4(text: string, start: number, out: Uint8Array, at: number): boolean {
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = start; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46;
    if (c === 46) {
      if (digits === 0 || parts === 4) return false;
      out[at + parts++] = part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return false;
      part = part * 10 + (c - 48);
      if (part > 255) return false;
      digits++;
    } else {
      return false;
    }
  }
  return parts === 4;
}

/** Hex groups (and a final dotted quad, when `v4` allows one) of `text` from `start` to `end`, written at `out[at]`; how many bytes, or -1. */
function readGroups(text: string, start: number, end: number, out: Uint8Array, at: number, v4: boolean): number {
  if (start === end) return 0;
  let written = 0;
  let value = 0;
  let digits = 0;
  for (let i = start; i <= end; i++) {
    const c = i < end ? text.charCodeAt(i) : 58;
    if (c === 58) {
      if (digits === 0 || at + written + 2 > 16) return -1;
      out[at + written++] = value >> 8;
      out[at + written++] = value & 0xff;
      value = 0;
      digits = 0;
      continue;
    }
    if (c === 46) {
      // A dotted quad ends the address: it starts after the last colon read.
      if (!v4 || end !== text.length || at + written + 4 > 16) return -1;
      return readIpv4(text, i - digits, out, at + written) ? written + 4 : -1;
    }
    const hex = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (hex === -1 || ++digits > 4) return -1;
    value = (value << 4) | hex;
  }
  return written;
}

/** Where the groups after `::` are read before they move to the end of the address. */
const TAIL = new Uint8Array(16);

/** Reads an IPv6 address (a zone `%eth0` is ignored) into `out`. */
function readIpv6(text: string, out: Uint8Array): boolean {
  const zone = text.indexOf('%');
  const source = zone === -1 ? text : text.slice(0, zone);
  const end = source.length;
  const gap = source.indexOf('::');
  if (gap === -1) return readGroups(source, 0, end, out, 0, true) === 16;
  if (source.indexOf('::', gap + 1) !== -1) return false;
  const head = readGroups(source, 0, gap, out, 0, false);
  if (head < 0) return false;
  const tail = readGroups(source, gap + 2, end, TAIL, 0, true);
  // `::` stands for one group of zeros at least.
  if (tail < 0 || head + tail > 14) return false;
  out.fill(0, head);
  for (let i = 0; i < tail; i++) out[16 - tail + i] = TAIL[i]!;
  return true;
}

/**
 * The 16 bytes of an IP address, IPv4 as IPv4-mapped, written to `out` (a new array by default)
 * and returned; null when `text` is not an IP address. A bracketed IPv6 address (`[::1]`, a URL's
 * host) is read too.
 */
export function addressBytes(text: string, out: Uint8Array = new Uint8Array(16)): Uint8Array | null {
  if (text.length === 0) return null;
  if (text.charCodeAt(0) === 91 && text.charCodeAt(text.length - 1) === 93) return readIpv6(text.slice(1, -1), out) ? out : null;
  if (text.indexOf(':') !== -1) return readIpv6(text, out) ? out : null;
  out.fill(0, 0, 10);
  out[MAPPED_FF] = 0xff;
  out[MAPPED_FF + 1] = 0xff;
  return readIpv4(text, 0, out, 12) ? out : null;
}

/** Whether bytes `from` to `to` (excluded) of `b` are all zero. */
function zeros(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i] !== 0) return false;
  return true;
}

/** The class of an IPv4 address a.b.c.d (RFC 6890's special-purpose registry, and the metadata services). */
function ipv4Class(a: number, b: number, c: number, d: number): AddressClass | null {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8: "this network"; a connect to 0.0.0.0 reaches this host
  if (a === 10) return 'private';
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return (c === 169 && d === 254) || (c === 170 && d === 2) ? 'metadata' : 'link-local'; // AWS, GCP, Azure, OCI; ECS task metadata
  if (a === 172 && (b & 0xf0) === 16) return 'private';
  if (a === 192 && b === 168) return 'private';
  // 100.64.0.0/10, shared address space (RFC 6598): carrier-grade NAT, and the pods of some clusters.
  if (a === 100 && (b & 0xc0) === 64) return b === 100 && c === 100 && d === 200 ? 'metadata' : 'private'; // Alibaba Cloud's metadata
  if (a === 168 && b === 63 && c === 129 && d === 16) return 'metadata'; // Azure's WireServer: a public address every Azure VM reaches
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF protocol assignments, TEST-NET-1
  if (a === 192 && b === 88 && c === 99) return 'reserved'; // 6to4 relay anycast (deprecated)
  if (a === 198 && (b & 0xfe) === 18) return 'reserved'; // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return 'reserved'; // TEST-NET-2, -3
  if (a >= 224) return a < 240 ? 'multicast' : 'reserved'; // 240.0.0.0/4 and the broadcast address
  return null;
}

/** The class of an address as 16 bytes. */
export function classOfBytes(b: Uint8Array): AddressClass | null {
  const first = b[0]!;
  if (first === 0 && zeros(b, 1, 10)) {
    // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), and ::, ::1.
    if (b[10] === 0xff && b[11] === 0xff) return ipv4Class(b[12]!, b[13]!, b[14]!, b[15]!);
    if (b[10] === 0 && b[11] === 0) {
      if (zeros(b, 12, 15)) return b[15] === 0 ? 'unspecified' : b[15] === 1 ? 'loopback' : ipv4Class(0, 0, 0, b[15]!);
      return ipv4Class(b[12]!, b[13]!, b[14]!, b[15]!);
    }
  }
  // ::ffff:0:a.b.c.d: SIIT's IPv4-translated form.
  if (first === 0 && zeros(b, 1, 8) && b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0) return ipv4Class(b[12]!, b[13]!, b[14]!, b[15]!);
  if (first === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zeros(b, 4, 12)) return ipv4Class(b[12]!, b[13]!, b[14]!, b[15]!); // NAT64, 64:ff9b::/96
    if (b[4] === 0 && b[5] === 1) return 'reserved'; // local-use NAT64, 64:ff9b:1::/48: translated to addresses not seen here
  }
  if (first === 0x20 && b[1] === 0x02) return ipv4Class(b[2]!, b[3]!, b[4]!, b[5]!); // 6to4, 2002::/16
  if (first === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (first === 0xfe && (b[1]! & 0xc0) === 0xc0) return 'private'; // fec0::/10, site-local (deprecated, routed privately)
  if ((first & 0xfe) === 0xfc) return isAwsMetadataV6(b) ? 'metadata' : 'private'; // fc00::/7, unique local
  if (first === 0xff) return 'multicast';
  if ((first & 0xe0) !== 0x20) return 'reserved'; // outside 2000::/3, the global unicast space: unassigned, discard-only (100::/64)...
  if (first === 0x20 && b[1] === 0x01) {
    if (b[2] === 0 && b[3] === 0) return 'reserved'; // Teredo, 2001::/32: tunnels to addresses it does not show
    if (b[2] === 0 && b[3] === 2 && b[4] === 0 && b[5] === 0) return 'reserved'; // benchmarking, 2001:2::/48
    if (b[2] === 0x0d && b[3] === 0xb8) return 'reserved'; // documentation, 2001:db8::/32
  }
  if (first === 0x3f && b[1] === 0xff && (b[2]! & 0xf0) === 0) return 'reserved'; // documentation, 3fff::/20
  return null;
}

/** fd00:ec2::254, the IPv6 address of AWS's instance metadata service: unique-local, so private otherwise. */
function isAwsMetadataV6(b: Uint8Array): boolean {
  return b[0] === 0xfd && b[1] === 0 && b[2] === 0x0e && b[3] === 0xc2 && zeros(b, 4, 14) && b[14] === 0x02 && b[15] === 0x54;
}

/** Where addressClass reads an address: classifying keeps none of its bytes. */
const SCRATCH = new Uint8Array(16);

/** The class of `address` (an IPv4 or IPv6 address as text), null when it is public; undefined when it is not an IP address. */
export function addressClass(address: string): AddressClass | null | undefined {
  const bytes = addressBytes(address, SCRATCH);
  return bytes === null ? undefined : classOfBytes(bytes);
}

/** A range of addresses: its first 16 bytes (IPv4 as IPv4-mapped) and its prefix length over those 16 bytes. */
export interface Cidr {
  readonly bytes: Uint8Array;
  readonly bits: number;
  /** As written. */
  readonly text: string;
}

/**
 * A CIDR range (`10.0.0.0/8`, `fd00::/8`; a bare address is the range of that one address), or
 * why it is not one: a bad address or prefix, or bits set past the prefix (`10.0.0.1/8`, which
 * usually means a typo).
 */
export function parseCidr(text: string): Cidr | string {
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const bytes = addressBytes(address);
  if (bytes === null || address.startsWith('[')) return `${JSON.stringify(address)} is not an IPv4 or IPv6 address`;
  const v4 = address.indexOf(':') === -1;
  const width = v4 ? 32 : 128;
  const prefix = slash === -1 ? String(width) : text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > width) return `the prefix length "/${prefix}" is not a number from 0 to ${width}`;
  const bits = Number(prefix) + (v4 ? 96 : 0);
  for (let bit = bits; bit < 128; bit++) {
    if ((bytes[bit >> 3]! & (0x80 >> (bit & 7))) !== 0) return `${text} has bits set past its /${prefix} prefix: write the range's first address (${networkText(bytes, bits, v4)}/${prefix})`;
  }
  return { bytes, bits, text };
}

/** The first address of the range of `bytes` under `bits`, as text, for the message of a CIDR with host bits. */
function networkText(bytes: Uint8Array, bits: number, v4: boolean): string {
  const net = new Uint8Array(16);
  for (let bit = 0; bit < bits; bit++) net[bit >> 3] = net[bit >> 3]! | (bytes[bit >> 3]! & (0x80 >> (bit & 7)));
  if (v4) return `${net[12]}.${net[13]}.${net[14]}.${net[15]}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((net[i]! << 8) | net[i + 1]!).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

/** Whether `bytes` (an address read by addressBytes) is in `cidr`. */
export function inCidr(bytes: Uint8Array, cidr: Cidr): boolean {
  const whole = cidr.bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== cidr.bytes[i]) return false;
  const rest = cidr.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole]! & mask) === cidr.bytes[whole];
}
