/**
 * The request headers the core reads, found in ONE pass over `rawHeaders`: Node then never
 * builds the `req.headers` object on the hot path, and the same pass produces the list of
 * headers to forward to a backend, with the client's identity and proxy headers set apart
 * (identity-headers.ts): they go on only where `spec.passthroughHeaders` lets them. `Via` is set
 * apart too: the loop guard reads it, and a backend gets it with the gateway's entry (hop-mark.ts).
 *
 * Repeated headers: the first value wins for the singletons read here (as Node does for them);
 * `host` and `authorization` repetitions are counted so that they can be refused.
 */
import { IDENTITY_HEADERS, isIdentityBeyondExact } from './identity-headers.ts';

/** Request headers that never travel to a backend. */
export const NOT_FORWARDED: readonly string[] = [
  // Hop-by-hop (RFC 9110 §7.6.1): they describe the client's connection, not the request.
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  // The backend gets its own authority as Host (written by the upstream client).
  'host',
  // The client's credentials are for the gateway: a backend gets only what prepareBackend sets.
  'authorization',
  'cookie',
  // Origin was checked by the gateway; a backend doing its own rebinding check must not see a
  // browser origin it was never configured for.
  'origin',
  // Recomputed for the body actually sent.
  'content-length',
  'expect',
  // The gateway's own request id is sent instead.
  'x-request-id',
  // No header of HTTP's: a CGI backend (PHP, Apache, Go's net/http/cgi) sets it as HTTP_PROXY,
  // which HTTP client libraries take for the proxy of their own requests (httpoxy, CVE-2016-5385).
  'proxy',
];

/** What the loop does with a header it does not read itself: one Map lookup classifies it. */
const DROPPED = 1;
const IDENTITY = 2;
/** `Via`: read (the gateway's loop guard, hop-mark.ts), and written anew toward a backend with the gateway's entry. */
const VIA = 3;
/**
 * What #read did with a header: taken (it goes no further), read and forwarded as it is (none of
 * the names it reads so is dropped or set apart: test/core/request-head.test.ts), not one it reads.
 */
const TAKEN = 0;
const FORWARDED = 1;
const UNREAD = 2;
const CLASS_OF = new Map<string, number>([...NOT_FORWARDED.map((name) => [name, DROPPED] as const), ...IDENTITY_HEADERS.map((name) => [name, IDENTITY] as const), ['via', VIA]]);
/**
 * The lengths and first letters of CLASS_OF's names: most names a client sends are none of them,
 * and are told so here without the Map lookup, which hashes every character of a name (a fresh
 * string from the parser each request: ~500 instructions a name in the transparent row).
 */
const LONGEST_CLASSED = 32;
const MAY_BE_CLASSED = new Uint8Array(LONGEST_CLASSED * 128);
for (const name of CLASS_OF.keys()) {
  if (name.length >= LONGEST_CLASSED) throw new Error(`request-head.ts: ${name} is longer than the classes' table`);
  MAY_BE_CLASSED[name.length * 128 + name.charCodeAt(0)] = 1;
}

/** CLASS_OF's class of a lower-case name, or undefined. */
function classOf(name: string): number | undefined {
  const first = name.charCodeAt(0);
  if (name.length >= LONGEST_CLASSED || !(first < 128) || MAY_BE_CLASSED[name.length * 128 + first] === 0) return undefined;
  return CLASS_OF.get(name);
}

export class RequestHead {
  host: string | undefined = undefined;
  /** Host lines in the request: more than one is a 400 (RFC 9112 §3.2). */
  hostCount = 0;
  origin: string | undefined = undefined;
  contentType: string | undefined = undefined;
  contentLength: string | undefined = undefined;
  requestId: string | undefined = undefined;
  mcpMethod: string | undefined = undefined;
  mcpName: string | undefined = undefined;
  /** `MCP-Protocol-Version`. */
  protocolVersion: string | undefined = undefined;
  /** One of Mcp-Method, Mcp-Name, MCP-Protocol-Version came twice: a proxy could route on the other copy. */
  mcpRepeated = false;
  /** `Mcp-Session-Id`; repeated ones are joined with ", " as node:http does (no session has such an id). */
  sessionId: string | undefined = undefined;
  authorization: string | undefined = undefined;
  authorizationCount = 0;
  /** The request asked to switch protocols (Upgrade): ignored, but the connection ends after it. */
  upgrade = false;
  /** The request has a body (Content-Length other than 0, or Transfer-Encoding). */
  hasBody = false;
  /** Lower-case `[name, value, ...]` of the headers that may be forwarded to a backend. */
  readonly forward: string[] = [];
  /** Lower-case `[name, value, ...]` of the identity and proxy headers (identity-headers.ts); null when there are none. */
  identity: string[] | null = null;
  /** Names listed in `Connection` (hop-by-hop too), when the client sent any besides close/keep-alive. */
  connectionTokens: string | undefined = undefined;
  /** `Via`, its lines joined with ", " (one list, RFC 9110 §5.3); not in `forward`: a backend gets it with the gateway's entry. */
  via: string | undefined = undefined;

  constructor(raw: readonly string[]) {
    const forward = this.forward;
    for (let i = 0; i < raw.length; i += 2) {
      // Read as written first: most clients (fetch, the SDKs) write names in lower case, and a
      // name lowered that is lower case already costs a scan and a copy (header-list.ts). Only a
      // name that is none of those read here is lowered, and read again if lowering changed it.
      let name = raw[i]!;
      const value = raw[i + 1]!;
      let read = this.#read(name, value);
      if (read === UNREAD) {
        const lower = name.toLowerCase();
        if (lower !== name) {
          name = lower;
          read = this.#read(name, value);
        }
      }
      if (read === TAKEN) continue;
      if (read === FORWARDED) {
        forward.push(this.#forwardedName, value);
        continue;
      }
      const kind = classOf(name);
      if (kind === undefined) {
        if (!isIdentityBeyondExact(name)) forward.push(name, value);
        else (this.identity ??= []).push(name, value);
      } else if (kind !== DROPPED) this.#setApart(kind, name, value);
    }
    const tokens = this.connectionTokens;
    // `keep-alive` and `close` as most clients write them are told without the expression.
    if (tokens !== undefined && tokens !== 'keep-alive' && tokens !== 'close' && !PLAIN_CONNECTION.test(tokens)) {
      dropConnectionTokens(forward, tokens);
      if (this.identity !== null) dropConnectionTokens(this.identity, tokens);
    }
  }

  /**
   * The name of the header #read last found FORWARDED, as this file spells it: the same string
   * object every request, which the head written toward a backend compares with the last one's
   * by reference alone (head-memo.ts), where the parser's copy would be compared letter by letter.
   */
  #forwardedName = '';

  /** A header this class reads, by its lower-case name: TAKEN (not forwarded), FORWARDED (as it is, named by #forwardedName), or UNREAD. */
  #read(name: string, value: string): number {
    switch (name) {
      case 'host':
        this.host ??= value;
        this.hostCount++;
        return TAKEN;
      case 'origin':
        this.origin ??= value;
        return TAKEN;
      case 'content-type':
        this.contentType ??= value;
        this.#forwardedName = 'content-type';
        return FORWARDED;
      case 'accept':
        this.#forwardedName = 'accept';
        return FORWARDED;
      case 'content-length':
        this.contentLength ??= value;
        if (value !== '0') this.hasBody = true;
        return TAKEN;
      case 'transfer-encoding':
        this.hasBody = true;
        return TAKEN;
      case 'upgrade':
        this.upgrade = true;
        return TAKEN;
      case 'x-request-id':
        this.requestId ??= value;
        return TAKEN;
      case 'mcp-method':
        if (this.mcpMethod !== undefined) this.mcpRepeated = true;
        this.mcpMethod ??= value;
        this.#forwardedName = 'mcp-method';
        return FORWARDED;
      case 'mcp-name':
        if (this.mcpName !== undefined) this.mcpRepeated = true;
        this.mcpName ??= value;
        this.#forwardedName = 'mcp-name';
        return FORWARDED;
      case 'mcp-protocol-version':
        if (this.protocolVersion !== undefined) this.mcpRepeated = true;
        this.protocolVersion ??= value;
        this.#forwardedName = 'mcp-protocol-version';
        return FORWARDED;
      case 'mcp-session-id':
        this.sessionId = this.sessionId === undefined ? value : `${this.sessionId}, ${value}`;
        this.#forwardedName = 'mcp-session-id';
        return FORWARDED;
      case 'authorization':
        this.authorization ??= value;
        this.authorizationCount++;
        return TAKEN;
      case 'connection':
        this.connectionTokens = value;
        return TAKEN;
    }
    return UNREAD;
  }

  /** An identity or proxy header (kept for passthroughHeaders), or a Via line (joined to the others). */
  #setApart(kind: number, name: string, value: string): void {
    if (kind === IDENTITY) (this.identity ??= []).push(name, value);
    else this.via = this.via === undefined ? value : `${this.via}, ${value}`;
  }
}

/** `Connection: keep-alive` / `close`, as nearly every client sends it: lists no header to drop. */
const PLAIN_CONNECTION = /^\s*(keep-alive|close)\s*$/i;

/** Headers the client listed in `Connection` are hop-by-hop too (e.g. `Connection: close, x-foo`). */
function dropConnectionTokens(forward: string[], tokens: string): void {
  for (const token of tokens.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === 'close' || name === 'keep-alive' || name === '') continue;
    for (let i = forward.length - 2; i >= 0; i -= 2) if (forward[i] === name) forward.splice(i, 2);
  }
}
