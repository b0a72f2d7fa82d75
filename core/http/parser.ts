/**
 * Node's own HTTP/1.1 parser (llhttp, the binding node:http uses for its server and client),
 * reached through `node:_http_common`: the one place Gatehouse touches it. The upstream client
 * (core/upstream/) parses responses with it and the own server (core/http/wire/) requests:
 * headers arrive as strings from C++, and no stream machinery sits between the socket and the
 * parser. Measured against undici in core/README.md (Design).
 *
 * The binding is not a documented API, so its shape is checked once at load: if a Node release
 * changes it, Gatehouse refuses to start with a clear message instead of misparsing.
 */
import { createRequire } from 'node:module';
import process from 'node:process';
import { Buffer } from 'node:buffer';

/** The callback slots of the binding, by index. */
export interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize: number, lenient: number): void;
  /** Bytes parsed, or an Error with `code` (e.g. `HPE_INVALID_CONSTANT`). */
  execute(data: Buffer): number | Error;
  /** Signals the end of the input (bodies delimited by the connection closing). */
  finish(): number | Error | undefined;
  close(): void;
  remove(): void;
  /** Makes the parser the listener of a stream handle's reads (node:http's server does so): parsed in C++, no 'data' events. */
  consume(handle: object): void;
  unconsume(): void;
  /** A copy of the read being parsed (during a `kOnExecute` callback). */
  getCurrentBuffer(): Buffer;
  [slot: number]: unknown;
}

interface NativeParserClass {
  new (): NativeParser;
  readonly REQUEST: number;
  readonly RESPONSE: number;
  readonly kOnMessageBegin: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
  readonly kOnExecute: number;
  readonly kLenientNone: number;
}

const { HTTPParser, methods } = createRequire(import.meta.url)('_http_common') as { HTTPParser: NativeParserClass; methods: string[] };

const RESPONSE = HTTPParser.RESPONSE;
export const kOnMessageBegin = HTTPParser.kOnMessageBegin;
export const kOnHeaders = HTTPParser.kOnHeaders;
export const kOnHeadersComplete = HTTPParser.kOnHeadersComplete;
export const kOnBody = HTTPParser.kOnBody;
export const kOnMessageComplete = HTTPParser.kOnMessageComplete;
export const kOnExecute = HTTPParser.kOnExecute;
const kLenientNone = HTTPParser.kLenientNone;

/** Maximum size of a backend's response head (Node's default). */
const MAX_HEADER_SIZE = 16 * 1024;

export function createResponseParser(): NativeParser {
  const parser = new HTTPParser();
  parser.initialize(RESPONSE, {}, MAX_HEADER_SIZE, kLenientNone);
  return parser;
}

/** The method names by the parser's method number (`onHeadersComplete`'s fourth argument). */
export const METHODS: readonly string[] = methods;

/** A parser for requests (strict: smuggling shapes such as Content-Length with Transfer-Encoding are errors). */
export function createRequestParser(maxHeaderSize: number): NativeParser {
  const parser = new HTTPParser();
  parser.initialize(HTTPParser.REQUEST, {}, maxHeaderSize, kLenientNone);
  return parser;
}

/** Parses a canned response once: proves the binding behaves as this module expects. */
function selfCheck(): void {
  const parser = createResponseParser();
  let status = 0;
  let body = '';
  let complete = false;
  parser[kOnHeadersComplete] = (_major: number, _minor: number, headers: string[], _m: unknown, _u: unknown, code: number) => {
    status = code;
    if (headers[0] !== 'Content-Length') throw new Error('unexpected header layout');
    return 0;
  };
  parser[kOnBody] = (chunk: Buffer) => {
    body += chunk.toString();
  };
  parser[kOnMessageComplete] = () => {
    complete = true;
  };
  const response = Buffer.from('HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok');
  const result = parser.execute(response);
  parser.close();
  if (result !== response.length || status !== 201 || body !== 'ok' || !complete) {
    throw new Error(
      `Gatehouse: this Node.js (${process.version}) has an HTTP parser binding Gatehouse does not know; use Node 20 or 22`,
    );
  }
}

selfCheck();
