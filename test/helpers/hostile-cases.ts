/**
 * The cases of the hostile-input property tests, one family a section: HTTP framing, request
 * headers, JSON-RPC bodies (test/security/hostile-*.test.ts), and each case's bytes and how its
 * exchange ends, for the mixed run that measures the gateway's RSS. Every arbitrary is written
 * for a `Target` (the gateway's address, its tool names, a session of the cases).
 */
import fc from 'fast-check';
import { requestBytes, sentinelBytes, sessionHeaders, splitAt, type ExchangeOptions, type Target } from './hostile.ts';

// ---- HTTP framing ----

/** A request hidden in a body: never answered as one of its own. */
export const SMUGGLED = 'GET /smuggled-request HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

export interface Framed {
  /** The request's bytes. */
  readonly bytes: Buffer;
  readonly method: string;
  /** Its framing is one a strict parser reads without doubt (a body hidden in it stays a body). */
  readonly exact: boolean;
}

export interface FramingCase {
  readonly requests: Framed[];
  /** Bytes after the requests: garbage, or nothing. */
  readonly tail: Buffer;
  readonly cuts: number[];
  readonly gapMs: number;
  readonly ending: 'sentinel' | 'half-close' | 'destroy';
}

const latin1 = (s: string): Buffer => Buffer.from(s, 'latin1');
const bytesArb = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));

/**
 * Each part of a request drawn good or hostile: a request has one fault (or none, or faults
 * everywhere), so that most cases reach past the parser into the gateway with one thing wrong.
 */
type Part = 'method' | 'target' | 'version' | 'eol' | 'host' | 'length' | 'chunked' | 'headers';
const PARTS: readonly Part[] = ['method', 'target', 'version', 'eol', 'host', 'length', 'chunked', 'headers'];
const faultArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant<'none' | 'all' | Part>('none') },
  { weight: 8, arbitrary: fc.constantFrom<'none' | 'all' | Part>(...PARTS) },
  { weight: 1, arbitrary: fc.constant<'none' | 'all' | Part>('all') },
);

const methodArb = (hostile: boolean) =>
  hostile
    ? fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('PUT', 'PATCH', 'HEAD', 'TRACE', 'CONNECT', 'PRI', 'M-SEARCH', 'PROPFIND', 'LINK', 'SOURCE', 'QUERY', 'ACL', 'PURGE') },
        { weight: 2, arbitrary: fc.constantFrom('post', 'Post', 'P0ST', 'GE T', '', ' POST', 'POST\t', 'GET\x00', '\xd0\x9f\xd0\x9e\xd0\xa1\xd0\xa2') },
        { weight: 1, arbitrary: fc.stringMatching(/^[A-Z_-]{1,12}$/) },
      )
    : fc.constantFrom('POST', 'POST', 'POST', 'GET', 'DELETE', 'OPTIONS');

const targetArb = (hostile: boolean, path: string) =>
  hostile
    ? fc.oneof(
        {
          weight: 4,
          arbitrary: fc.constantFrom(`${path}?x=1`, `${path}/`, path.toUpperCase(), '/healthz', '/readyz', '/status', '/metrics', '*', `http://127.0.0.1${path}`, `/${path}`, `/%2e%2e${path}`, `${path}#f`, '/%00', '/\xff', '', path.slice(1), `${path}%0d%0ax-injected:%20yes`, `${path}\x00`, '/m cp', '/' + 'a'.repeat(20_000)),
        },
        { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }).map((s) => '/' + s) },
      )
    : fc.constant(path);

const versionArb = (hostile: boolean) =>
  hostile ? fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/0.9', 'HTTP/1.2', 'HTTP/9.9', 'http/1.1', 'HTTP/1.1 ', 'HTTP/1', 'HTTP/11', 'HTTPS/1.1', '', 'HTTP/1.1\x00', 'HTTP/3') : fc.constant('HTTP/1.1');

const eolArb = (hostile: boolean) => (hostile ? fc.constantFrom('\n', '\r', '\r\r\n', '\n\r') : fc.constant('\r\n'));

/** The body's content: a good JSON-RPC request, a request hidden in it, random bytes, or nothing. */
const bodyArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(latin1('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')) },
  { weight: 2, arbitrary: fc.constant(latin1(SMUGGLED)) },
  { weight: 2, arbitrary: bytesArb(200) },
  { weight: 1, arbitrary: fc.constant(Buffer.alloc(0)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 300_000 }).map((n) => Buffer.alloc(n, 0x20)) },
);

/** Content-Length values for a body of `length` bytes: exact, or short, long, repeated, conflicting, malformed. */
const clValueArb = (length: number, hostile: boolean) =>
  hostile
    ? fc.oneof(
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 50 }).map((k) => ({ values: [String(length + k)], exact: false })) }, // body short: truncated
        { weight: 2, arbitrary: fc.integer({ min: 1, max: 50 }).map((k) => ({ values: [String(Math.max(0, length - k))], exact: false })) }, // body long: the rest is the next request
        { weight: 1, arbitrary: fc.constant({ values: [String(length), String(length)], exact: false }) },
        { weight: 1, arbitrary: fc.constant({ values: [String(length), String(length + 1)], exact: false }) },
        { weight: 1, arbitrary: fc.constant({ values: [`${length}, ${length}`], exact: false }) },
        {
          weight: 2,
          arbitrary: fc.constantFrom('+5', '-1', '0x10', '1e2', '', ' ', '5 5', '99999999999999999999999', '18446744073709551616', '\xd9\xa3', '5;', '4\t', '00000000000000000000000000000000001').map((v) => ({ values: [v], exact: false })),
        },
      )
    : fc.constant({ values: [String(length)], exact: true });

const teArb = (hostile: boolean) =>
  hostile
    ? fc.oneof(
        { weight: 1, arbitrary: fc.constantFrom(['CHUNKED'], ['Chunked']).map((values) => ({ values, exact: true })) },
        { weight: 3, arbitrary: fc.constantFrom(['gzip, chunked'], ['chunked, gzip'], ['chunked, chunked'], ['identity'], ['x'], ['chunked\t'], [' chunked'], ['chunked', 'chunked'], ['gzip', 'chunked'], ['chunked;q=1'], ['\x0bchunked']).map((values) => ({ values, exact: false })) },
      )
    : fc.constant({ values: ['chunked'], exact: true });

const hexSize = (n: number, style: number): string => (style === 1 ? n.toString(16).toUpperCase() : style === 2 ? '000' + n.toString(16) : n.toString(16));

/** One chunk of a chunked body: its size line (well or badly written) and data. */
const chunkArb = (data: Buffer, hostile: boolean) =>
  fc.record({
    size: fc.oneof(
      { weight: 10, arbitrary: fc.integer({ min: 0, max: 2 }).map((style) => ({ text: hexSize(data.length, style), exact: true })) },
      {
        weight: hostile ? 3 : 0,
        arbitrary: fc
          .constantFrom('-1', 'fffffffffffffffffff', ' ' + data.length.toString(16), data.length.toString(16) + ' ', '+' + data.length.toString(16), 'g', '', (data.length + 1).toString(16), Math.max(0, data.length - 1).toString(16), '0x' + data.length.toString(16))
          .map((text) => ({ text, exact: false })),
      },
    ),
    ext: fc.oneof(
      { weight: 8, arbitrary: fc.constant({ text: '', exact: true }) },
      { weight: 2, arbitrary: fc.constantFrom(';a=b', ';a', ';a="q"', ';a="x;y"').map((text) => ({ text, exact: true })) },
      { weight: hostile ? 3 : 0, arbitrary: fc.constantFrom(';', ';;', '; a = b', ';a=\x01', ';a="\r\n"', ';a=' + 'x'.repeat(20_000), '\x00').map((text) => ({ text, exact: false })) },
    ),
    eol: fc.oneof({ weight: 8, arbitrary: fc.constant('\r\n') }, { weight: hostile ? 1 : 0, arbitrary: eolArb(true) }),
  });

/** `data` as a chunked body, in 1 to 4 chunks, with trailers and an end well or badly written. */
function chunkedBody(data: Buffer, hostile: boolean): fc.Arbitrary<{ bytes: Buffer; exact: boolean }> {
  const weightIfHostile = hostile ? 2 : 0;
  return fc
    .record({
      split: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
      lastExt: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: weightIfHostile, arbitrary: fc.constantFrom(';x=y', ';', ';x="\x7f"') }),
      trailers: fc.oneof(
        { weight: 8, arbitrary: fc.constant({ text: '', exact: true }) },
        { weight: 2, arbitrary: fc.constantFrom('x-trailer: 1\r\n', 'content-length: 3\r\n', 'host: evil.example\r\n', 'transfer-encoding: chunked\r\n', 'mcp-session-id: x\r\n').map((text) => ({ text, exact: true })) },
        { weight: weightIfHostile, arbitrary: fc.constantFrom('bad header\r\n', 'x: \x00\r\n', ':\r\n', 'x-t: 1\n', ' folded\r\n').map((text) => ({ text, exact: false })) },
      ),
      ending: fc.oneof({ weight: 8, arbitrary: fc.constant('\r\n') }, { weight: weightIfHostile, arbitrary: fc.constantFrom('', '\n', 'garbage') }),
    })
    .chain(({ split, lastExt, trailers, ending }) => {
      const pieces = splitAt(data, split).filter((p) => p.length > 0); // a zero size would end the body early
      return fc.tuple(...pieces.map((p) => chunkArb(p, hostile))).map((chunks) => {
        let exact = trailers.exact && ending === '\r\n' && lastExt === '';
        const parts: Buffer[] = [];
        chunks.forEach((c, i) => {
          exact &&= c.size.exact && c.ext.exact && c.eol === '\r\n';
          parts.push(latin1(`${c.size.text}${c.ext.text}${c.eol}`), pieces[i]!, latin1(c.eol));
        });
        parts.push(latin1(`0${lastExt}\r\n${trailers.text}${ending}`));
        return { bytes: Buffer.concat(parts), exact };
      });
    });
}

/** A request with hostile framing: its line, its headers, its body; one part wrong (or none, or all). */
function framedArb(rig: Target): fc.Arbitrary<Framed> {
  const path = new URL(rig.url).pathname;
  return faultArb.chain((fault) => {
    const bad = (part: Part): boolean => fault === 'all' || fault === part;
    return fc
      .record({
        method: methodArb(bad('method')),
        target: targetArb(bad('target'), path),
        version: versionArb(bad('version')),
        eol: eolArb(bad('eol')),
        host: bad('host') ? fc.constantFrom([], [rig.host, rig.host], ['evil.example'], [''], [rig.host + '\x00']) : fc.constant([rig.host]),
        session: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
        expect: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: bad('headers') ? 3 : 0, arbitrary: fc.constantFrom('100-continue', '100-Continue', 'nonsense') }),
        connection: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: bad('headers') ? 3 : 0, arbitrary: fc.constantFrom('close', 'keep-alive', 'upgrade', 'close, close', 'x-foo, content-type') }),
        framing: bad('chunked') ? fc.constantFrom('chunked', 'both') : bad('length') ? fc.constant('cl') : fc.constantFrom('none', 'cl', 'cl', 'chunked'),
        body: bodyArb,
      })
      .chain((r) => {
        const framing =
          r.framing === 'none'
            ? fc.constant({ headers: [] as [string, string][], body: Buffer.alloc(0), exact: true })
            : r.framing === 'cl'
              ? clValueArb(r.body.length, bad('length')).map((cl) => ({ headers: cl.values.map((v): [string, string] => ['content-length', v]), body: r.body, exact: cl.exact }))
              : fc.tuple(teArb(bad('chunked')), chunkedBody(r.body, bad('chunked'))).map(([te, chunked]) => ({
                  headers: [...te.values.map((v): [string, string] => ['transfer-encoding', v]), ...(r.framing === 'both' ? [['content-length', String(chunked.bytes.length)] as [string, string]] : [])],
                  body: chunked.bytes,
                  exact: te.exact && chunked.exact && r.framing !== 'both',
                }));
        return framing.map((f) => {
          const headers: [string, string][] = r.host.map((h): [string, string] => ['host', h]);
          headers.push(...sessionHeaders(rig).filter(([n]) => r.session || n !== 'mcp-session-id'));
          if (r.expect !== null) headers.push(['expect', r.expect]);
          if (r.connection !== null) headers.push(['connection', r.connection]);
          headers.push(...f.headers);
          let head = `${r.method} ${r.target} ${r.version}`.trimEnd() + r.eol;
          for (const [name, value] of headers) head += `${name}: ${value}${r.eol}`;
          const bytes = Buffer.concat([latin1(head + r.eol), f.body]);
          const wellFormedLine = r.eol === '\r\n' && r.version === 'HTTP/1.1' && /^[A-Z]+$/.test(r.method) && /^\/[\x21-\x7e]*$/.test(r.target) && r.host.length === 1;
          return { bytes, method: r.method, exact: wellFormedLine && f.exact };
        });
      });
  });
}

export function framingCaseArb(rig: Target): fc.Arbitrary<FramingCase> {
  return fc.record({
    requests: fc.array(framedArb(rig), { minLength: 1, maxLength: 3 }),
    tail: fc.oneof(
      { weight: 6, arbitrary: fc.constant(Buffer.alloc(0)) },
      { weight: 1, arbitrary: bytesArb(64) },
      { weight: 1, arbitrary: fc.constantFrom('GARBAGE\r\n\r\n', 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"jsonrpc"', 'HTTP/1.1 200 OK\r\n\r\n', '\r\n\r\n\r\n', 'GET / HTTP/1.1\r\n').map(latin1) },
    ),
    cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
    gapMs: fc.constantFrom(0, 0, 0, 1, 5),
    ending: fc.constantFrom('sentinel', 'sentinel', 'sentinel', 'half-close', 'destroy'),
  }).map((c) => Object.assign(c, { [fc.toStringMethod]: () => describeFramingCase(c) }));
}

/** A request's bytes as text, long runs of one character shortened (`x{20000}`). */
function shown(bytes: Buffer): string {
  return bytes.toString('latin1').replace(/(.)\1{63,}/gs, (run, ch: string) => `${ch}{${run.length}}`);
}

export function describeFramingCase(c: FramingCase): string {
  return `case ${JSON.stringify({ requests: c.requests.map((r) => shown(r.bytes)), tail: shown(c.tail), cuts: c.cuts, gapMs: c.gapMs, ending: c.ending })}`;
}

// ---- Request headers ----

/** The headers the gateway reads itself. */
const READ_HEADERS = ['Host', 'Content-Type', 'Mcp-Session-Id', 'Authorization', 'Mcp-Protocol-Version', 'Mcp-Method', 'Mcp-Name', 'Origin'] as const;
/** Sent twice, each of these must never be served (a proxy could act on the copy that was not checked). */
export const NEVER_TWICE = new Set(['host', 'mcp-method', 'mcp-name', 'mcp-protocol-version']);

/** Text written to the wire byte for byte (one char per byte). */
const utf8Bytes = (s: string): string => Buffer.from(s, 'utf8').toString('latin1');

/** A hostile header value, as the bytes to write (latin1 text). */
function valueArb(rig: Target): fc.Arbitrary<string> {
  const own = `http://${rig.host}`;
  return fc.oneof(
    { weight: 5, arbitrary: fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 }) },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        '',
        ' ',
        '\t',
        '  padded  ',
        rig.caseSessionId,
        `${rig.caseSessionId}, ${rig.caseSessionId}`,
        '00000000-0000-0000-0000-000000000000',
        '2026-07-28',
        '2025-11-25',
        '2025-03-26',
        '1999-01-01',
        'tools/call',
        'tools/list',
        'initialize',
        rig.echoTool,
        `=?base64?${Buffer.from(rig.echoTool).toString('base64')}?=`,
        '=?base64?!!!?=',
        '=?base64?//79?=',
        'Bearer ',
        'Bearer x',
        'Bearer a.b.c',
        'Basic dXNlcjpwYXNz',
        'bearer',
        'null',
        'https://evil.example',
        own,
        'null, null',
        'application/json; charset=latin1',
        'application/json, text/plain',
        'text/plain',
        'application/jsonx',
        'multipart/form-data; boundary=x',
      ),
    },
    { weight: 2, arbitrary: fc.constantFrom('a\rb', 'a\nb', 'a\r\nx-injected: yes', 'a\x00b', '\x00', 'a\x7fb', 'a\x01b', 'a\x0bb', 'a\x1bb', 'a\r\n b', 'a\r\n\tb') },
    { weight: 2, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 24 }).map((a) => Buffer.from(a).toString('latin1')) },
    { weight: 2, arbitrary: fc.constantFrom('caf\xe9', '\xff\xfe', utf8Bytes('café ☕ 𝄞'), utf8Bytes('ﬁ'), utf8Bytes('\u2028'), utf8Bytes('ı'), '\xc0\xaf', '\xed\xa0\x80') },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 40_000 }).map((n) => 'v'.repeat(n)) },
  );
}

/** A header name: one the gateway reads (in any case), a plain token, or bytes that are not a token. */
const nameArb = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...READ_HEADERS), fc.constantFrom('as is', 'lower', 'upper')).map(([n, c]) => (c === 'lower' ? n.toLowerCase() : c === 'upper' ? n.toUpperCase() : n)) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/) },
  { weight: 2, arbitrary: fc.constantFrom('X Space', 'x-nul\x00', 'x:colon', '', ' host', 'host ', 'caf\xe9', utf8Bytes('ключ'), '\x7f', 'content-length', 'transfer-encoding', 'connection', 'expect', 'upgrade', 'x-request-id', 'last-event-id', 'cookie', '__proto__', 'constructor', 'x-forwarded-for', 'mcp-param-x') },
);

type Mutation =
  | { kind: 'replace' | 'add'; name: string; value: string }
  | { kind: 'many'; count: number; size: number }
  | { kind: 'fold'; name: string; value: string };

function mutationArb(rig: Target): fc.Arbitrary<Mutation> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constantFrom('replace' as const, 'add' as const), name: nameArb, value: valueArb(rig) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('many' as const), count: fc.integer({ min: 20, max: 600 }), size: fc.integer({ min: 1, max: 60 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('fold' as const), name: nameArb, value: valueArb(rig) }) },
  );
}

export interface HeaderCase {
  readonly era: '2025' | '2026';
  readonly headers: [string, string][];
  readonly body: string;
  /** Names sent more than once (lower case). */
  readonly repeated: Set<string>;
}

/** The good request a case starts from: a 2025 session call, or a 2026-07-28 stateless one. */
function baseRequest(rig: Target, era: '2025' | '2026', id: number): { headers: [string, string][]; body: string } {
  const headers: [string, string][] = [
    ['Host', rig.host],
    ['Content-Type', 'application/json'],
    ['Accept', 'application/json, text/event-stream'],
  ];
  if (rig.authorization !== null) headers.push(['Authorization', rig.authorization]);
  const call = { name: rig.echoTool, arguments: { text: 'hello' } };
  if (era === '2025') {
    headers.push(['Mcp-Session-Id', rig.caseSessionId], ['Mcp-Protocol-Version', '2025-11-25']);
    return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: call }) };
  }
  headers.push(['Mcp-Protocol-Version', '2026-07-28'], ['Mcp-Method', 'tools/call'], ['Mcp-Name', rig.echoTool]);
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'hostile-headers', version: '1' } };
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { ...call, _meta: meta } }) };
}

export function headerCaseArb(rig: Target): fc.Arbitrary<HeaderCase> {
  return fc
    .record({ era: fc.constantFrom('2025' as const, '2026' as const), id: fc.integer({ min: 1, max: 1_000_000 }), mutations: fc.array(mutationArb(rig), { minLength: 1, maxLength: 4 }) })
    .map(({ era, id, mutations }) => {
      const { headers, body } = baseRequest(rig, era, id);
      for (const m of mutations) {
        if (m.kind === 'many') {
          for (let i = 0; i < m.count; i++) headers.push([`x-many-${i}`, 'm'.repeat(m.size)]);
        } else if (m.kind === 'fold') {
          headers.push([m.name, `${m.value}\r\n folded`]);
        } else if (m.kind === 'replace') {
          const at = headers.findIndex(([n]) => n.toLowerCase() === m.name.toLowerCase());
          if (at === -1) headers.push([m.name, m.value]);
          else headers[at] = [m.name, m.value];
        } else {
          headers.push([m.name, m.value]);
        }
      }
      const counts = new Map<string, number>();
      for (const [n] of headers) counts.set(n.toLowerCase(), (counts.get(n.toLowerCase()) ?? 0) + 1);
      const repeated = new Set([...counts].filter(([, n]) => n > 1).map(([name]) => name));
      const c = { era, headers, body, repeated };
      return Object.assign(c, { [fc.toStringMethod]: () => describeHeaderCase(c) });
    });
}

export function describeHeaderCase(c: HeaderCase): string {
  const shown = c.headers.map(([n, v]) => `${n}: ${v}`.replace(/(.)\1{63,}/gs, (run, ch: string) => `${ch}{${run.length}}`));
  const many = shown.filter((h) => h.startsWith('x-many-')).length;
  return `case ${JSON.stringify({ era: c.era, headers: shown.filter((h) => !h.startsWith('x-many-')), manyHeaders: many, body: c.body })}`;
}

// ---- JSON-RPC bodies ----

/**
 * A JSON value written by `jsonText`: plain values, `Raw` text put in as it is (numbers JSON
 * cannot hold exactly, invalid UTF-8, broken escapes), and objects whose keys may repeat.
 */
export type Json = null | boolean | number | string | Json[] | Raw | Obj;
export class Raw {
  constructor(readonly bytes: Buffer) {}
}
export class Obj {
  constructor(readonly entries: [string, Json][]) {}
}

const raw = (text: string | Buffer): Raw => new Raw(typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
const obj = (entries: Record<string, Json>, extra: [string, Json][] = []): Obj => new Obj([...Object.entries(entries), ...extra]);

/** The bytes of a Json value. */
export function jsonText(value: Json): Buffer {
  const parts: Buffer[] = [];
  const write = (v: Json): void => {
    if (v instanceof Raw) parts.push(v.bytes);
    else if (v instanceof Obj) {
      parts.push(Buffer.from('{'));
      v.entries.forEach(([k, x], i) => {
        parts.push(Buffer.from(`${i === 0 ? '' : ','}${JSON.stringify(k)}:`, 'utf8'));
        write(x);
      });
      parts.push(Buffer.from('}'));
    } else if (Array.isArray(v)) {
      parts.push(Buffer.from('['));
      v.forEach((x, i) => {
        if (i > 0) parts.push(Buffer.from(','));
        write(x);
      });
      parts.push(Buffer.from(']'));
    } else parts.push(Buffer.from(JSON.stringify(v), 'utf8'));
  };
  write(value);
  return Buffer.concat(parts);
}

/** Numbers that are not what they seem: past double range, past safe integers, negative zero, long fractions. */
const hostileNumberArb = fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890', '9007199254740993', '-0', '0.1e-400', '1E+2', '1.0', '-9223372036854775809', '1' + '0'.repeat(400)).map(raw);

/** Strings that are not what they seem: invalid UTF-8, lone surrogates, escapes, controls, huge. */
const hostileStringArb = fc.oneof(
  fc.constantFrom('"\xff"', '"\xc0\xaf"', '"\xed\xa0\x80"', '"\xe2\x82"', '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"a\\u2028b"', '"\xef\xbb\xbf"', '"\\/"').map(raw),
  fc.constantFrom('', ' ', '\u0000', '__proto__', 'constructor', 'prototype', 'toString', '=?base64?eA==?=', '../../etc/passwd', '\r\nx-injected: yes', 'ﬀ', '𝄞'.repeat(100)),
  fc.integer({ min: 10_000, max: 400_000 }).map((n) => 'x'.repeat(n)),
);

/** Any JSON, now and then with a hostile leaf. */
const anyJsonArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: hostileNumberArb },
  { weight: 1, arbitrary: hostileStringArb },
);

/** A value nested `depth` times in arrays or objects. */
const deepArb = fc.record({ depth: fc.integer({ min: 100, max: 200_000 }), kind: fc.constantFrom('[', '{"a":', '[{"a":') }).map(({ depth, kind }) => {
  const close = kind === '[' ? ']' : kind === '{"a":' ? '}' : '}]';
  return raw(kind.repeat(depth) + '1' + close.repeat(depth));
});

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  'server/discover',
  'tasks/get',
  'tasks/list',
  'sampling/createMessage',
  'elicitation/create',
  'roots/list',
] as const;

const methodValueArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom<Json>(...METHODS) },
  { weight: 2, arbitrary: fc.constantFrom<Json>('', 'rpc.discover', '__proto__', 'constructor', 'tools/call/', 'TOOLS/CALL', 'tools/list\u0000', 'notifications/', 'x'.repeat(5000)) },
  { weight: 1, arbitrary: fc.constantFrom<Json>(1, null, true, [], obj({})) },
  { weight: 1, arbitrary: hostileStringArb },
);

const idValueArb: fc.Arbitrary<Json | undefined> = fc.oneof(
  { weight: 16, arbitrary: fc.oneof(fc.integer(), fc.string({ maxLength: 20 })) },
  { weight: 2, arbitrary: fc.constantFrom<Json | undefined>(undefined, null, true, [], obj({}), 1.5, obj({ a: 1 }), [1]) },
  { weight: 1, arbitrary: hostileNumberArb },
  { weight: 1, arbitrary: hostileStringArb },
);

/** `params` for `method`, with the fields it has drawn well or badly. */
function paramsArb(t: Target, method: Json, modern: boolean): fc.Arbitrary<Json | undefined> {
  const name = fc.oneof({ weight: 4, arbitrary: fc.constantFrom<Json>(t.echoTool, 'echo', 'add', 'fail', 'crash', 'log', 'nope', 'alpha_echo', 'beta_add') }, { weight: 1, arbitrary: anyJsonArb }, { weight: 1, arbitrary: hostileStringArb });
  const args = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom<Json>(obj({ text: 'hi' }), obj({ a: 1, b: 2 }), obj({ level: 'info', message: 'm' }), obj({})) },
    { weight: 2, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), anyJsonArb, { maxKeys: 4 }).map((d) => obj(d)) },
    { weight: 1, arbitrary: anyJsonArb },
    { weight: 1, arbitrary: deepArb },
  );
  const uri = fc.oneof(fc.constantFrom<Json>('fixture://alpha/static', 'fixture://beta/item/1', 'file:///etc/passwd', 'fixture://alpha/item/{id}', ''), anyJsonArb, hostileStringArb);
  const fields: Record<string, fc.Arbitrary<Json>> = { _meta: metaArb };
  switch (method) {
    case 'tools/call':
      Object.assign(fields, { name, arguments: args });
      break;
    case 'prompts/get':
      Object.assign(fields, { name: fc.oneof(fc.constantFrom<Json>('greet', 'alpha_greet'), anyJsonArb), arguments: args });
      break;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      Object.assign(fields, { uri });
      break;
    case 'completion/complete':
      Object.assign(fields, { ref: fc.oneof(fc.constant<Json>(obj({ type: 'ref/prompt', name: 'greet' })), anyJsonArb), argument: fc.oneof(fc.constant<Json>(obj({ name: 'name', value: 'a' })), anyJsonArb) });
      break;
    case 'logging/setLevel':
      Object.assign(fields, { level: fc.oneof(fc.constantFrom<Json>('debug', 'emergency', 'nope', ''), anyJsonArb) });
      break;
    case 'notifications/cancelled':
      Object.assign(fields, { requestId: idValueArb.map((v) => v ?? null), reason: anyJsonArb });
      break;
    case 'notifications/progress':
      Object.assign(fields, { progressToken: idValueArb.map((v) => v ?? null), progress: anyJsonArb });
      break;
    case 'initialize':
      Object.assign(fields, {
        protocolVersion: fc.oneof({ weight: 3, arbitrary: fc.constantFrom<Json>('2025-11-25', '2025-03-26', '2026-07-28') }, { weight: 1, arbitrary: anyJsonArb }),
        capabilities: fc.oneof({ weight: 3, arbitrary: fc.constant<Json>(obj({})) }, { weight: 1, arbitrary: anyJsonArb }, { weight: 1, arbitrary: deepArb }),
        clientInfo: fc.oneof({ weight: 3, arbitrary: fc.constant<Json>(obj({ name: 'hostile', version: '1' })) }, { weight: 1, arbitrary: anyJsonArb }),
      });
      break;
  }
  // Now and then a field left out; `_meta` (the 2026-07-28 envelope) mostly where the era wants it.
  const { _meta: metaField, ...rest } = fields;
  const keys = Object.keys(rest);
  const withMeta = fc.oneof({ weight: modern ? 8 : 1, arbitrary: fc.constant(true) }, { weight: modern ? 1 : 8, arbitrary: fc.constant(false) });
  return fc.oneof(
    {
      weight: 10,
      arbitrary: fc.record({ values: fc.record(rest), drop: keys.length === 0 ? fc.constant(null) : fc.option(fc.constantFrom(...keys), { freq: 6 }), meta: withMeta, metaValue: metaField! }).map(({ values, drop, meta, metaValue }) => {
        const entries = Object.entries(values).filter(([k]) => k !== drop);
        if (meta) entries.push(['_meta', metaValue]);
        return new Obj(entries);
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom<Json | undefined>(undefined, null, [], 'params', 1, [obj({})]) },
    { weight: 1, arbitrary: anyJsonArb },
  );
}

/** `_meta` of a 2026-07-28 request, from right to hostile. */
const metaArb: fc.Arbitrary<Json> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({
        version: fc.oneof({ weight: 6, arbitrary: fc.constant<Json>('2026-07-28') }, { weight: 1, arbitrary: fc.constantFrom<Json>('2025-11-25', '2026-07-29', '', 2026, null, obj({}), 'x'.repeat(10_000)) }),
        capabilities: fc.oneof(
          { weight: 5, arbitrary: fc.constantFrom<Json>(obj({}), obj({ elicitation: obj({}) }), obj({ sampling: obj({}), roots: obj({}) })) },
          { weight: 1, arbitrary: fc.constantFrom<Json>(null, [], 'all', obj({ elicitation: 'yes' }), obj({ sampling: null }), obj({ experimental: obj({ x: [1, 2, 3] }) })) },
          { weight: 1, arbitrary: anyJsonArb },
          { weight: 1, arbitrary: deepArb },
        ),
        clientInfo: fc.oneof({ weight: 3, arbitrary: fc.constant<Json>(obj({ name: 'hostile', version: '1' })) }, { weight: 1, arbitrary: anyJsonArb }, { weight: 1, arbitrary: hostileStringArb.map((s) => obj({ name: s, version: s })) }),
        logLevel: fc.oneof({ weight: 3, arbitrary: fc.constant<Json | undefined>(undefined) }, { weight: 1, arbitrary: fc.constantFrom<Json | undefined>('debug', 'nope', 5, null, obj({})) }),
        requestState: fc.oneof({ weight: 4, arbitrary: fc.constant<Json | undefined>(undefined) }, { weight: 1, arbitrary: fc.oneof(fc.base64String({ maxLength: 200 }) as fc.Arbitrary<Json>, anyJsonArb, hostileStringArb) }),
        inputResponses: fc.oneof({ weight: 4, arbitrary: fc.constant<Json | undefined>(undefined) }, { weight: 1, arbitrary: fc.oneof(anyJsonArb, fc.constant<Json>(obj({ x: obj({ result: obj({}) }) }))) }),
        progressToken: fc.oneof({ weight: 4, arbitrary: fc.constant<Json | undefined>(undefined) }, { weight: 1, arbitrary: idValueArb }),
        extra: fc.array(fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/unknown', 'io.modelcontextprotocol/serverInfo'), fc.string({ maxLength: 10 })), anyJsonArb), { maxLength: 2 }),
      })
      .map((m) => {
        const entries: [string, Json][] = [
          ['io.modelcontextprotocol/protocolVersion', m.version],
          ['io.modelcontextprotocol/clientCapabilities', m.capabilities],
          ['io.modelcontextprotocol/clientInfo', m.clientInfo],
        ];
        if (m.logLevel !== undefined) entries.push(['io.modelcontextprotocol/logLevel', m.logLevel]);
        if (m.requestState !== undefined) entries.push(['io.modelcontextprotocol/requestState', m.requestState]);
        if (m.inputResponses !== undefined) entries.push(['io.modelcontextprotocol/inputResponses', m.inputResponses]);
        if (m.progressToken !== undefined) entries.push(['progressToken', m.progressToken]);
        return new Obj([...entries, ...m.extra]);
      }),
  },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, [], 'meta', 1, obj({})) },
  { weight: 1, arbitrary: anyJsonArb },
);

/** One JSON-RPC message: a request, notification or response, each field right or wrong, keys now and then repeated. */
function messageArb(t: Target, modern: boolean, opening = false): fc.Arbitrary<{ value: Json; method: Json | undefined; id: Json | undefined }> {
  return fc
    .record({
      kind: fc.constantFrom('request', 'request', 'request', 'request', 'notification', 'response'),
      jsonrpc: fc.oneof({ weight: 20, arbitrary: fc.constant<Json | undefined>('2.0') }, { weight: 1, arbitrary: fc.constantFrom<Json | undefined>(undefined, 2, '2.00', '1.0', null, obj({})) }),
      // Without a session, mostly what opens one.
      method: opening ? fc.oneof({ weight: 3, arbitrary: fc.constant<Json>('initialize') }, { weight: 1, arbitrary: methodValueArb }) : methodValueArb,
      id: idValueArb,
      duplicate: fc.oneof({ weight: 8, arbitrary: fc.constant<[string, Json] | null>(null) }, { weight: 1, arbitrary: fc.tuple(fc.constantFrom('id', 'method', 'params', 'jsonrpc', 'result'), anyJsonArb) }),
      result: anyJsonArb,
      error: fc.oneof(fc.constant<Json>(obj({ code: -32601, message: 'nope' })), anyJsonArb),
    })
    .chain((m) =>
      (m.kind === 'response' ? fc.constant(undefined) : paramsArb(t, m.method, modern)).map((params) => {
        const entries: [string, Json][] = [];
        if (m.jsonrpc !== undefined) entries.push(['jsonrpc', m.jsonrpc]);
        if (m.kind !== 'notification' && m.id !== undefined) entries.push(['id', m.id]);
        if (m.kind === 'response') entries.push(m.id === undefined || typeof m.id === 'number' ? ['result', m.result] : ['error', m.error]);
        else {
          entries.push(['method', m.method]);
          if (params !== undefined) entries.push(['params', params]);
        }
        if (m.duplicate !== null) entries.splice(Math.min(1, entries.length), 0, m.duplicate);
        return { value: new Obj(entries), method: m.kind === 'response' ? undefined : m.method, id: m.kind === 'notification' ? undefined : m.id };
      }),
    );
}

export interface JsonRpcCase {
  readonly era: '2025' | '2026' | 'none';
  readonly body: Buffer;
  readonly headers: [string, string][];
  /** A single request with an id the gateway can read: its answer must carry it (or null). */
  readonly id: string | number | null;
  /** Whether the answer may be a stream that stays open (subscriptions/listen). */
  readonly streamOk: boolean;
}

/** A body: one message, a batch, any JSON, deep nesting, or bytes that are not JSON at all. */
export function jsonRpcCaseArb(t: Target): fc.Arbitrary<JsonRpcCase> {
  const bodyArb = (modern: boolean, opening: boolean) => {
    const single = messageArb(t, modern, opening).map((m) => ({ body: jsonText(m.value), method: m.method, id: m.id }));
    return fc.oneof(
      { weight: 16, arbitrary: single },
      { weight: 2, arbitrary: fc.array(messageArb(t, modern), { minLength: 0, maxLength: 5 }).map((ms) => ({ body: jsonText(ms.map((m) => m.value)), method: undefined as Json | undefined, id: undefined as Json | undefined })) },
      { weight: 2, arbitrary: anyJsonArb.map((v) => ({ body: jsonText(v), method: undefined as Json | undefined, id: undefined as Json | undefined })) },
      { weight: 1, arbitrary: deepArb.map((v) => ({ body: jsonText(v), method: undefined as Json | undefined, id: undefined as Json | undefined })) },
      {
        weight: 1,
        arbitrary: fc
          .oneof(
            fc.uint8Array({ maxLength: 100 }).map((a) => Buffer.from(a)),
            fc.constantFrom('', ' ', '{', '{"jsonrpc":"2.0",', '\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":"ping"} {"x":1}', 'null', 'NaN', '{"jsonrpc":"2.0","id":1,"method":"ping",}', "{'jsonrpc':'2.0'}").map((s) => Buffer.from(s, 'latin1')),
          )
          .map((b) => ({ body: b, method: undefined as Json | undefined, id: undefined as Json | undefined })),
      },
    );
  };
  return fc
    .constantFrom('2025' as const, '2025' as const, '2026' as const, '2026' as const, 'none' as const)
    .chain((era) => fc.record({ era: fc.constant(era), body: bodyArb(era === '2026', era === 'none'), mcpHeaders: fc.constantFrom('match', 'match', 'match', 'absent', 'wrong') }))
    .map(({ era, body: b, mcpHeaders }) => {
      const headers: [string, string][] = [
        ['host', t.host],
        ['content-type', 'application/json'],
        ['accept', 'application/json, text/event-stream'],
      ];
      if (t.authorization !== null) headers.push(['authorization', t.authorization]);
      if (era === '2025') headers.push(['mcp-session-id', t.caseSessionId], ['mcp-protocol-version', '2025-11-25']);
      if (era === '2026') headers.push(['mcp-protocol-version', '2026-07-28']);
      const method = typeof b.method === 'string' ? b.method : undefined;
      if (era === '2026' && method !== undefined && mcpHeaders !== 'absent' && /^[\x21-\x7e]{1,200}$/.test(method)) {
        headers.push(['mcp-method', mcpHeaders === 'wrong' ? 'tools/list' : method]);
        const text = b.body.toString('utf8');
        const name = /"(?:name|uri)":("(?:[^"\\]|\\.)*")/.exec(text)?.[1];
        if (name !== undefined) {
          try {
            const decoded = JSON.parse(name) as string;
            // (A name too long for a header is left out: that case is the headers family's.)
            if (decoded.length <= 1_000) headers.push(['mcp-name', /^[\x21-\x7e]{1,200}$/.test(decoded) ? decoded : `=?base64?${Buffer.from(decoded).toString('base64')}?=`]);
          } catch {
            // not a name the header can carry
          }
        }
      }
      const id = typeof b.id === 'string' || (typeof b.id === 'number' && Number.isFinite(b.id)) ? b.id : null;
      const c: JsonRpcCase = { era, body: b.body, headers, id, streamOk: method === 'subscriptions/listen' };
      return Object.assign(c, { [fc.toStringMethod]: () => describeJsonRpcCase(c) });
    });
}

export function describeJsonRpcCase(c: JsonRpcCase): string {
  const body = c.body.toString('latin1').replace(/(.{1,6}?)\1{20,}/gs, (run, unit: string) => `(${unit}){${run.length / unit.length}}`);
  return `case ${JSON.stringify({ era: c.era, headers: c.headers.filter(([n]) => n !== 'authorization').map(([n, v]) => `${n}: ${v}`), body: body.length > 2000 ? body.slice(0, 2000) + `…(${c.body.length} bytes)` : body })}`;
}

// ---- Any family, for the mixed run ----

export type AnyCase = { family: 'framing'; c: FramingCase } | { family: 'headers'; c: HeaderCase } | { family: 'jsonrpc'; c: JsonRpcCase };

export function anyCaseArb(t: Target): fc.Arbitrary<AnyCase> {
  return fc.oneof(
    framingCaseArb(t).map((c): AnyCase => ({ family: 'framing', c })),
    headerCaseArb(t).map((c): AnyCase => ({ family: 'headers', c })),
    jsonRpcCaseArb(t).map((c): AnyCase => ({ family: 'jsonrpc', c })),
  );
}

/** What a client writes for a case, and how its exchange ends. */
export function exchangeOf(t: Target, a: AnyCase): { writes: Buffer[]; options: ExchangeOptions } {
  const path = new URL(t.url).pathname;
  switch (a.family) {
    case 'framing': {
      const c = a.c;
      const all = Buffer.concat([...c.requests.map((r) => r.bytes), c.tail]);
      const ending = c.ending === 'sentinel' ? { kind: 'sentinel' as const, bytes: sentinelBytes(t) } : { kind: c.ending };
      return { writes: splitAt(all, c.cuts), options: { ending, methods: c.requests.map((r) => r.method.trim().toUpperCase()), gapMs: c.gapMs } };
    }
    case 'headers': {
      const c = a.c;
      // A request that carries Upgrade is the connection's last: a request after it is not served
      // (the connection closes after the first answer; hostile-headers.test.ts checks that the
      // first is answered). Such a case waits for its answer instead of sending the sentinel.
      const upgrade = c.headers.some(([n]) => n.toLowerCase() === 'upgrade');
      const ending = upgrade ? { kind: 'responses' as const, count: 1 } : { kind: 'sentinel' as const, bytes: sentinelBytes(t) };
      return { writes: [requestBytes('POST', path, c.headers, c.body)], options: { ending, methods: ['POST'] } };
    }
    case 'jsonrpc': {
      const c = a.c;
      return { writes: [requestBytes('POST', path, c.headers, c.body)], options: { ending: { kind: 'responses', count: 1 }, methods: ['POST'], streamOk: c.streamOk } };
    }
  }
}

export function describeAny(a: AnyCase): string {
  return `${a.family} ${a.family === 'framing' ? describeFramingCase(a.c) : a.family === 'headers' ? describeHeaderCase(a.c) : describeJsonRpcCase(a.c)}`;
}
