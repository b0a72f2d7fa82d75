/**
 * A modern request's envelope as its client writes it, known by its bytes. A 2026-07-28 client
 * ends every request with the same `_meta` (how the SDK clients write one:
 * `...,"_meta":{"io.modelcontextprotocol/protocolVersion":...}}}`), and JSON.parse reads those
 * bytes anew each time: their long keys, hashed and interned, cost about as much as the rest of
 * a tools/call. The tails seen are kept (a few, for the whole process), and a request that ends
 * with one is read without it: the rest parsed, a copy of the envelope put back. A legacy backend
 * gets the same bytes without the envelope (withoutEnvelope), where the message would otherwise
 * be written anew without it (towardLegacy and JSON.stringify).
 *
 * What parse gives is what JSON.parse gives for the whole body, or null (then the body is read
 * the ordinary way). The rest of the body, closed with `}}`, must parse as an object whose keys are
 * among `jsonrpc`, `id`, `method` and `params`, only `params` an object (so the object the
 * envelope's brace closes, the last member's value, is `params`, whatever key is written twice),
 * `params` without a `_meta` of its own, and not ending in `{` (`"params":{` and the envelope is
 * no JSON, though the rest closed is). Anything else (another order of keys, a progressToken in
 * `_meta`, spacing) is read the ordinary way.
 *
 * Bounded: MAX_TAILS tails of at most MAX_TAIL_BYTES each, whatever clients send; a client that
 * sends many envelopes pushes others' out, which only makes their reads ordinary again. A tail is
 * learned from a request read the ordinary way whose `_meta` is the envelope alone, spelled as
 * JSON.stringify spells it; a failed try skips the next SKIP_AFTER_MISS, so clients whose
 * requests never end so pay the stringify on few of them.
 */
import { Buffer } from 'node:buffer';
import { ENVELOPE_KEYS, META } from './era.ts';
import { MAX_NESTING, nestsDeeperThan, type JsonRpcRequest } from './jsonrpc.ts';

const MAX_TAILS = 8;
const MAX_TAIL_BYTES = 4096;
const SKIP_AFTER_MISS = 15;

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

interface Tail {
  /** `,"_meta":{...}}}`: the envelope member and the braces closing `params` and the request. */
  readonly bytes: Buffer;
  /** The envelope as read once; never handed out (each request gets a copy of its own). */
  readonly meta: Readonly<Record<string, unknown>>;
  /** Its client capabilities as JSON.stringify writes them (null: not an object), written once. */
  readonly capabilitiesJson: string | null;
}

/** A request read by a known tail: the message, and where its envelope member begins in the body. */
export interface EnvelopedRequest {
  readonly message: JsonRpcRequest;
  readonly at: number;
  /** The envelope's client capabilities as JSON.stringify writes them, or null (the tail's, one string for all its requests). */
  readonly capabilitiesJson: string | null;
}

export class EnvelopeTails {
  #tails: Tail[] = [];
  #skip = 0;

  /** `body` read without re-reading a known envelope; null when it does not end with one, or is not shaped so. */
  parse(body: Buffer): EnvelopedRequest | null {
    const tails = this.#tails;
    const length = body.length;
    if (tails.length === 0 || body[length - 1] !== CLOSE_BRACE) return null;
    for (const tail of tails) {
      const bytes = tail.bytes;
      if (bytes.length < length && bytes.compare(body, length - bytes.length) === 0) return readWithout(body, length - bytes.length, tail);
    }
    return null;
  }

  /** Keeps `body`'s tail when `message` (read from it the ordinary way, a modern request) ends with its envelope alone. */
  learn(message: JsonRpcRequest, body: Buffer): void {
    if (this.#skip > 0) {
      this.#skip--;
      return;
    }
    const tail = envelopeTail(message, body);
    // Known already (parse stopped at another tail this body also ends with, one nesting it): kept once.
    if (tail === null || this.#tails.some((known) => known.bytes.equals(tail.bytes))) {
      this.#skip = SKIP_AFTER_MISS;
      return;
    }
    this.#tails.unshift(tail);
    if (this.#tails.length > MAX_TAILS) this.#tails.pop();
  }
}

/** The tails every request of the process is read by: a tail's value is read from its bytes alone, so no client's reaches another's request but as those bytes say. */
export const knownEnvelopes = new EnvelopeTails();

/** `body` without its envelope member (beginning at `at`), closed again with `}}`: what a legacy backend gets. */
export function withoutEnvelope(body: Buffer, at: number): Buffer {
  const out = Buffer.allocUnsafe(at + 2);
  body.copy(out, 0, 0, at);
  out[at] = out[at + 1] = CLOSE_BRACE;
  return out;
}

/** The body read as JSON.parse reads it, the envelope member at `at` put back as a copy of the tail's; null when not shaped so. */
function readWithout(body: Buffer, at: number, tail: Tail): EnvelopedRequest | null {
  let last = at - 1;
  while (last > 0 && (body[last] === 0x20 || body[last] === 0x0a || body[last] === 0x0d || body[last] === 0x09)) last--;
  // A body nesting deeper than any request may is refused before anything reads it (jsonrpc.ts).
  if (body[last] === OPEN_BRACE || nestsDeeperThan(body, MAX_NESTING)) return null;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8', 0, at) + '}}');
  } catch {
    return null;
  }
  if (!isRequestShaped(value)) return null;
  value.params['_meta'] = copyJson(tail.meta);
  return { message: value, at, capabilitiesJson: tail.capabilitiesJson };
}

function isRequestShaped(value: unknown): value is JsonRpcRequest & { params: Record<string, unknown> } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const members = value as Record<string, unknown>;
  for (const key in members) {
    if (key === 'params') continue;
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'method') return false;
    const member = members[key];
    if (typeof member === 'object' && member !== null) return false;
  }
  const params = members['params'];
  return typeof params === 'object' && params !== null && !Array.isArray(params) && !Object.hasOwn(params, '_meta');
}

/** A JSON value copied (objects and arrays anew, the rest as is). */
function copyJson(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const key in value) out[key] = copyJson((value as Record<string, unknown>)[key]);
  return out;
}

/**
 * The tail `body` ends with when `message`'s `_meta` is the envelope alone and last, as
 * JSON.stringify writes it, and the body is read by it as parse reads one; null otherwise. Its
 * value is read from its own bytes, not taken from the message: the message's `_meta` may not
 * be what the bytes say (`1e999` is written `null`, `-0` as `0`; or the bytes may close another
 * object than `params`), and a tail's value is every later request's that ends with it.
 */
function envelopeTail(message: JsonRpcRequest, body: Buffer): Tail | null {
  const given = message.params?.['_meta'];
  if (typeof given !== 'object' || given === null || Array.isArray(given)) return null;
  for (const key in given) if (!ENVELOPE_KEYS.includes(key)) return null;
  const written = JSON.stringify(given);
  // A key `__proto__` is an own member to JSON.parse but the prototype to an assignment: such an envelope is not copied by copyJson, so not kept.
  if (written.includes('"__proto__"')) return null;
  const bytes = Buffer.from(',"_meta":' + written + '}}');
  if (bytes.length > MAX_TAIL_BYTES || bytes.length >= body.length || bytes.compare(body, body.length - bytes.length) !== 0) return null;
  const meta = JSON.parse(written) as Record<string, unknown>;
  const capabilities = meta[META.clientCapabilities];
  const capabilitiesJson = typeof capabilities === 'object' && capabilities !== null && !Array.isArray(capabilities) ? JSON.stringify(capabilities) : null;
  const tail: Tail = { bytes, meta, capabilitiesJson };
  return readWithout(body, body.length - bytes.length, tail) === null ? null : tail;
}
