/**
 * Holding a git source to public addresses (sources created through the admin API). Checking
 * what a host name resolves to and then letting git resolve it again would leave a window: a
 * name can answer a public address to the check and a private one to git (DNS rebinding). So the
 * name is resolved here, its refused addresses dropped (core/http/address-guard.ts decides), and git's curl
 * is told to use exactly the addresses kept (`http.curloptResolve`), with redirects off so that
 * no other, unchecked host is reached. Only http(s) can be pinned this way; the git source
 * refuses other transports when private addresses are not allowed.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { refusedAddress, type AddressPolicy } from '@gatehouse-mcp/gateway';
import { SyncFailure } from './source-reader.ts';

const POLICY: AddressPolicy = {
  allowPrivate: false,
  allowLoopback: false,
  hint: 'sources created through the admin API reach public addresses only, unless sync.allowPrivateAddresses is true',
};

/** Bound on the name lookup (the read's own time bound applies too). */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * The `http.curloptResolve` entry (`host:port:address[,address]`) pinning an http(s) repository's
 * host to its public addresses; throws SyncFailure when it has none.
 */
export async function pinPublicAddresses(repository: string, signal: AbortSignal): Promise<string> {
  const url = new URL(repository);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  const problem = authorityProblem(repository, url, port);
  if (problem !== null) throw new SyncFailure(problem);
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    const bound = AbortSignal.any([signal, AbortSignal.timeout(LOOKUP_TIMEOUT_MS)]);
    try {
      const lookingUp = lookup(host, { all: true, verbatim: true });
      const aborted = new Promise<never>((_, reject) => {
        if (bound.aborted) reject(bound.reason);
        bound.addEventListener('abort', () => reject(bound.reason), { once: true });
      });
      lookingUp.catch(() => {}); // settles after an abort too; nobody waits for it then
      addresses = (await Promise.race([lookingUp, aborted])).map((a) => a.address);
    } catch (err) {
      if (signal.aborted) throw err;
      const code = (err as NodeJS.ErrnoException).code;
      throw new SyncFailure(`the repository's host ${host} cannot be resolved (${code ?? (bound.aborted ? 'lookup timed out' : 'lookup failed')})`);
    }
  }
  const allowed = addresses.filter((address) => refusedAddress(address, POLICY) === null);
  if (allowed.length === 0) {
    const reason = addresses.length > 0 ? refusedAddress(addresses[0]!, POLICY) : 'it has no address';
    throw new SyncFailure(`refusing to fetch from ${host}: ${reason}`);
  }
  // curl names the host as in the URL (brackets for an IPv6 literal) and takes IPv6 addresses in brackets.
  const named = url.hostname;
  return `${named}:${port}:${allowed.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(',')}`;
}

/** A host name of letters, digits, dots and hyphens, or a bracketed IPv6 address; an optional port. */
const PLAIN_AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)(?::(\d{1,5}))?$/i;

/**
 * The pin only holds if git and curl connect to the host Node's URL parser read: the address's
 * authority, as written, must be a plain host (and port) equal to it. Where the parsers differ
 * they read different hosts: `https://93.184.216.34\@10.0.0.1/` is host 93.184.216.34 to Node
 * (a backslash ends the host) and 10.0.0.1 to git and curl (the rest is a user name); a percent
 * escape, a trailing dot or another spelling of an IP address would leave curl resolving a name
 * the pin does not cover. Such an address is refused.
 */
function authorityProblem(repository: string, url: URL, port: string): string | null {
  const written = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(repository)?.[1] ?? '';
  const plain = PLAIN_AUTHORITY.exec(written);
  const samePort = plain !== null && (plain[2] === undefined ? url.port === '' : Number(plain[2]) === Number(port));
  if (plain === null || plain[1]!.toLowerCase() !== url.hostname.toLowerCase() || !samePort) {
    return `the repository address's host must be written plainly (a name of letters, digits, dots and hyphens, or an IP address, and an optional port) for sources held to public addresses: git would not read ${JSON.stringify(written.slice(0, 200))} as the host ${url.hostname}`;
  }
  return null;
}
