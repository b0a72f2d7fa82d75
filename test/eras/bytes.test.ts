/**
 * The era bridge's byte paths: a backend's answer completed for a modern client without being
 * written anew (json-scan.ts), and a modern request's envelope cut out of the client's bytes for
 * a legacy backend (EnvelopeTails, envelope-tails.ts). Each either gives exactly what the parsed message
 * written anew would say, or gives up (null) — never something else.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { META, towardLegacy } from '../../core/protocol/era.ts';
import { EnvelopeTails, withoutEnvelope, type EnvelopedRequest } from '../../core/protocol/envelope-tails.ts';
import { completeResultBytes, isPlainResult } from '../../core/protocol/answer-bytes.ts';
import { readAlikeByAll } from '../../core/protocol/json-scan.ts';
import type { JsonRpcRequest } from '../../core/protocol/jsonrpc.ts';

const complete = (text: string, id = '7'): string | null => completeResultBytes(Buffer.from(text), id)?.toString() ?? null;

/** Answers no byte path takes: each is read and written anew. */
const NOT_PLAIN: readonly string[] = [
  '{"jsonrpc":"2.0","id":8,"result":{}}', // another request's
  '{"jsonrpc":"2.0","id":"7","result":{}}', // the same digits as a string
  '{"jsonrpc":"2.0","id":7.0,"result":{}}', // written otherwise
  '{"jsonrpc":"2.0","id":7,"id":8,"result":{}}', // an id twice
  '{"jsonrpc":"2.0","id":8,"result":{},"id":7}',
  '{"jsonrpc":"2.0","id":7,"result":{},"result":{"secret":1}}', // a result twice
  '{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"result":{}}',
  '{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"Session not found"}}',
  '{"jsonrpc":"2.0","id":7,"result":{},"extra":1}',
  '{"jsonrpc":"1.0","id":7,"result":{}}',
  '{"jsonrpc":"2.0","id":7,"res\\u0075lt":{}}', // a key spelled with an escape
  '{"jsonrpc":"2.0","id":7,"result":{"result\\u0054ype":"input_required"}}',
  '{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{}}}', // has its own
  '{"jsonrpc":"2.0","id":7,"result":[]}',
  '{"jsonrpc":"2.0","id":7,"result":null}',
  '{"jsonrpc":"2.0","id":7,"result":{"a":1}} x', // trailing bytes
  '{"jsonrpc":"2.0","id":7,"result":{"a":"unterminated}}',
  '{"jsonrpc":"2.0","id":7,"result":{"a":1}',
  '{"jsonrpc":"2.0","id":7,"result":{"a" 1}}',
  '{"jsonrpc":"2.0","id":7,"result":{"a":1,}}',
  '{"jsonrpc":"2.0","id":7,"result":{,"a":1}}',
  // Not JSON deeper down: the scanner reads every value, as JSON.parse would.
  '{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":""x" inside"}]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":[1,]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":[tru]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":[01]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":[1.]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":["\\x"]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":["\\u12"]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":["tab\there"]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":{"a":1]}}',
  '{"jsonrpc":"2.0","id":7,"result":{"content":{"a" 1}}}',
  '{"jsonrpc":"2.0","id":7,"result":{"deep":' + '['.repeat(100) + ']'.repeat(100) + '}}',
  '[{"jsonrpc":"2.0","id":7,"result":{}}]',
  '',
  '{}',
  // The two spellings SDKs write, read without the general loop: the same answers refused.
  '{"jsonrpc":"2.0","id":77,"result":{}}', // this id's digits and more
  '{"jsonrpc":"2.0","id":7 ,"result":{}} x',
  '{"result":{},"jsonrpc":"2.0","id":8}',
  '{"result":{},"jsonrpc":"2.0","id":77}',
  '{"result":{},"jsonrpc":"2.0","id":7,"id":8}',
  '{"result":{},"jsonrpc":"2.0","id":7,"result":{"secret":1}}',
  '{"result":{"resultType":"input_required"},"jsonrpc":"2.0","id":7}',
  '{"result":{"a":1},"jsonrpc":"2.0","id":7} x',
  '{"result":{"a":1},"jsonrpc":"2.0","id":7',
  '{"result":{"a":[1,]},"jsonrpc":"2.0","id":7}',
  '{"result":{"a":1},"jsonrpc":"1.0","id":7}',
];

describe('completeResultBytes: resultType into a result, the rest as sent', () => {
  it('adds resultType first in the result, whatever the order and spacing of the three keys', () => {
    for (const text of [
      '{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}',
      '{"result":{"content":[],"isError":false},"id":7,"jsonrpc":"2.0"}',
      ' {\n "id" : 7 ,\t"jsonrpc":"2.0", "result" : { "content" : [ ] , "isError" : false } }\n',
    ]) {
      const out = complete(text);
      assert.ok(out !== null, text);
      assert.deepEqual(JSON.parse(out), { jsonrpc: '2.0', id: 7, result: { resultType: 'complete', content: [], isError: false } });
      assert.equal(out.replace('"resultType":"complete",', ''), text, 'every other byte as the backend sent it');
    }
    assert.equal(complete('{"jsonrpc":"2.0","id":7,"result":{}}'), '{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}');
    assert.equal(complete('{"jsonrpc":"2.0","id":"a-1","result":{}}', '"a-1"'), '{"jsonrpc":"2.0","id":"a-1","result":{"resultType":"complete"}}');
  });

  it('skips values without reading them: strings with quotes, backslashes and braces, long ones, nesting', () => {
    const tricky = ['he said \\"}{\\"', 'a\\\\', '\\\\\\"', 'x'.repeat(47) + '\\"' + 'y'.repeat(100), '\\\\'.repeat(40), '\\"resultType\\" inside a string', ']]}}', 'caf\u00e9 ☕ \\u00e9'];
    for (const s of tricky) {
      const text = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"${s}"}],"deep":{"resultType":"inner","a":[1,2,{"b":null}]},"n":-1.5e3,"t":true}}`;
      const out = complete(text);
      assert.ok(out !== null, s);
      const expected = JSON.parse(text) as { result: Record<string, unknown> };
      assert.deepEqual(JSON.parse(out), { ...expected, result: { resultType: 'complete', ...expected.result } });
    }
  });

  it('gives up on anything but exactly this request\'s plain result', () => {
    for (const text of NOT_PLAIN) {
      assert.equal(complete(text), null, text);
    }
    const notUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"t":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    assert.equal(completeResultBytes(notUtf8, '7'), null, 'bytes that are not UTF-8');
  });

  it('never returns bytes that say something other than the parsed answer completed (random answers)', () => {
    let seed = 42;
    const random = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const atoms = ['"a"', '"\\""', '"\\\\"', '1', '-2.5', 'true', 'null', '"}"', '"]"', '"{\\"x\\":1}"'];
    const value = (depth: number): string => {
      if (depth > 3 || random(3) === 0) return atoms[random(atoms.length)]!;
      if (random(2) === 0) return `[${Array.from({ length: random(4) }, () => value(depth + 1)).join(',')}]`;
      return `{${Array.from({ length: random(4) }, (_, i) => `"k${i}":${value(depth + 1)}`).join(',')}}`;
    };
    for (let n = 0; n < 2000; n++) {
      const keys = [`"jsonrpc":"2.0"`, `"id":${random(3)}`, `"result":${random(4) === 0 ? value(1) : `{"resultType_":1,"c":${value(1)}}`}`];
      if (random(5) === 0) keys.push(`"${['id', 'result', 'jsonrpc', 'x'][random(4)]}":${value(1)}`);
      keys.sort(() => random(3) - 1);
      const text = `{${keys.join(random(2) === 0 ? ',' : ' , ')}}`;
      const out = complete(text, '1');
      type Parsed = { jsonrpc?: unknown; id?: unknown; result?: unknown };
      let parsed: Parsed | null = null;
      try {
        parsed = JSON.parse(text) as Parsed;
      } catch {
        parsed = null;
      }
      if (out === null) continue;
      assert.ok(parsed !== null && parsed.id === 1 && parsed.jsonrpc === '2.0' && Object.keys(parsed).length === 3, text);
      const result = parsed.result as Record<string, unknown>;
      assert.deepEqual(JSON.parse(out), { ...parsed, result: { resultType: 'complete', ...result } }, text);
    }
  });
});

describe('isPlainResult: a legacy client gets a plain result as the backend sent it', () => {
  it('takes exactly the answers completeResultBytes takes', () => {
    for (const text of [
      '{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}',
      ' {"result":{},"id":7,"jsonrpc":"2.0"} ',
      '{"jsonrpc":"2.0","id":7,"result":{"a":"}\\"{"}}',
      // As the TypeScript SDK writes it, and with white space after.
      '{"result":{"content":[],"isError":false},"jsonrpc":"2.0","id":7}',
      '{"result":{},"jsonrpc":"2.0","id":7}\n',
    ]) {
      assert.equal(isPlainResult(Buffer.from(text), '7'), true, text);
    }
    for (const text of NOT_PLAIN) assert.equal(isPlainResult(Buffer.from(text), '7'), false, text);
    const notUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"t":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    assert.equal(isPlainResult(notUtf8, '7'), false, 'bytes that are not UTF-8');
  });

  it('never takes another id for this request\'s: an id past ASCII is compared by its bytes, so it never passes as bytes', () => {
    // The request's id "Ã©" (U+00C3 U+00A9); the answer's "é" is the bytes C3 A9: compared code by byte, they matched.
    const idText = JSON.stringify('\u00c3\u00a9');
    for (const text of ['{"jsonrpc":"2.0","id":"é","result":{}}', '{"result":{},"jsonrpc":"2.0","id":"é"}', ' {"id":"é","jsonrpc":"2.0","result":{}}']) {
      assert.equal(isPlainResult(Buffer.from(text), idText), false, text);
      assert.equal(completeResultBytes(Buffer.from(text), idText), null, text);
    }
    // The right answer to a non-ASCII id is read and written anew (the parsed path), not refused.
    assert.equal(isPlainResult(Buffer.from('{"jsonrpc":"2.0","id":"é","result":{}}'), JSON.stringify('é')), false);
  });
});

describe('EnvelopeTails: a modern request read by its known envelope, and cut out of its bytes', () => {
  const envelope = { [META.protocolVersion]: '2026-07-28', [META.clientCapabilities]: { elicitation: { form: {} } }, [META.clientInfo]: { name: 'c', version: '1' } };
  const request = (params: Record<string, unknown>, id: number | string = 1): JsonRpcRequest => ({ jsonrpc: '2.0', id, method: 'tools/call', params });
  const plain = request({ name: 'echo', _meta: envelope });
  const plainBody = Buffer.from(JSON.stringify(plain));
  const meta = `,"_meta":${JSON.stringify(envelope)}}}`;
  /** Tails that know `envelope` (learned from a request read the ordinary way). */
  const knowing = (): EnvelopeTails => {
    const tails = new EnvelopeTails();
    tails.learn(plain, plainBody);
    return tails;
  };
  /** What parse reads from `text`: null, or exactly what JSON.parse reads (asserted). */
  const read = (tails: EnvelopeTails, text: string): EnvelopedRequest | null => {
    const known = tails.parse(Buffer.from(text));
    if (known !== null) {
      assert.deepStrictEqual(known.message, JSON.parse(text), text);
      // The capabilities' JSON the tail brings (the implicit session's id is derived from it) is the message's.
      const capabilities = (known.message.params!['_meta'] as Record<string, unknown>)[META.clientCapabilities];
      assert.equal(known.capabilitiesJson, typeof capabilities === 'object' && capabilities !== null && !Array.isArray(capabilities) ? JSON.stringify(capabilities) : null, text);
    }
    return known;
  };
  /** The bytes a legacy backend gets (call-routing.ts): cut when read by a known tail, and then read alike by all; else null. */
  const cut = (tails: EnvelopeTails, text: string): string | null => {
    const known = read(tails, text);
    if (known === null) return null;
    const bytes = withoutEnvelope(Buffer.from(text), known.at);
    return readAlikeByAll(bytes) ? bytes.toString() : null;
  };

  it('reads a request ending with a known envelope as JSON.parse reads it, and cuts it to what towardLegacy writes', () => {
    const tails = new EnvelopeTails();
    const first = request({ name: 'echo', arguments: { text: 'hi', note: ',"_meta":{}}}' }, _meta: envelope });
    assert.equal(tails.parse(Buffer.from(JSON.stringify(first))), null, 'nothing known yet: read the ordinary way');
    tails.learn(first, Buffer.from(JSON.stringify(first)));
    for (const id of [2, 'three', 4]) {
      const message = request({ name: 'echo', arguments: { text: `hi ${id}`, note: ',"_meta":{}}}' }, _meta: envelope }, id);
      assert.equal(cut(tails, JSON.stringify(message)), JSON.stringify(towardLegacy(message)));
    }
    assert.ok(read(tails, '{"id":5 , "method":"tools/call","jsonrpc":"2.0","params":{ "name" : "écho" ,"arguments":{"n":[1,{"a":null}]}\n' + meta) !== null, 'other order and spacing before the envelope');
  });

  it('gives each request an envelope of its own: a change to one reaches neither the next nor what is kept', () => {
    const tails = knowing();
    const one = tails.parse(plainBody)!;
    const two = tails.parse(plainBody)!;
    assert.notEqual(one.message.params!['_meta'], two.message.params!['_meta']);
    ((one.message.params!['_meta'] as Record<string, { name: string }>)[META.clientInfo]!).name = 'changed';
    ((one.message.params!['_meta'] as Record<string, Record<string, unknown>>)[META.clientCapabilities]!)['sampling'] = {};
    assert.deepStrictEqual(tails.parse(plainBody)!.message, plain);
    assert.equal(tails.parse(plainBody)!.capabilitiesJson, JSON.stringify(envelope[META.clientCapabilities]), 'the capabilities\' JSON is the tail\'s, not the changed copy\'s');
  });

  it('learns only an envelope alone and last, spelled as JSON.stringify spells it', () => {
    const notKept: [string, JsonRpcRequest, string][] = [
      ['a progressToken in _meta', request({ name: 'echo', _meta: { ...envelope, progressToken: 3 } }), ''],
      ['_meta not last', request({ _meta: envelope, name: 'echo' }), ''],
      ['written with spaces', plain, JSON.stringify(plain, null, 1)],
      ['a newline after', plain, JSON.stringify(plain) + '\n'],
      ['a key __proto__', request({ name: 'echo', _meta: { ...envelope, [META.clientCapabilities]: JSON.parse('{"__proto__":{"x":1}}') } }), ''],
      ['a tail over 4 KiB', request({ name: 'echo', _meta: { ...envelope, [META.clientInfo]: { name: 'c'.repeat(5000), version: '1' } } }), ''],
      ['a tail over 4 KiB in bytes, not in characters', request({ name: 'echo', _meta: { ...envelope, [META.clientInfo]: { name: 'é'.repeat(2100), version: '1' } } }), ''],
    ];
    for (const [why, message, text] of notKept) {
      const tails = new EnvelopeTails();
      const body = Buffer.from(text === '' ? JSON.stringify(message) : text);
      tails.learn(message, body);
      assert.equal(tails.parse(body), null, why);
      assert.equal(tails.parse(plainBody), null, why);
    }
    assert.ok(knowing().parse(plainBody) !== null);
  });

  it('takes a tail\'s value from its own bytes, only from a body read by it: a decoy after params teaches nothing', () => {
    const version = `"${META.protocolVersion}":"2026-07-28"`;
    const capabilities = (value: string): string => `"${META.clientCapabilities}":{"elicitation":${value}}`;
    for (const [sent, written] of [['1e999', 'null'], ['-0', '0']]) {
      const tails = new EnvelopeTails();
      // params' _meta holds Infinity (or -0), which JSON.stringify writes as the decoy's bytes end.
      const decoy = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{${version},${capabilities(sent!)}}},"zz":{"k":1,"_meta":{${version},${capabilities(written!)}}}}`;
      tails.learn(JSON.parse(decoy) as JsonRpcRequest, Buffer.from(decoy));
      const later = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","_meta":{${version},${capabilities(written!)}}}}`;
      assert.equal(read(tails, later), null, sent);
    }
  });

  it('keeps a tail once', () => {
    const tails = knowing();
    const named = (i: number): JsonRpcRequest => request({ name: 'echo', _meta: { ...envelope, [META.clientInfo]: { name: `client-${i}`, version: '1' } } });
    tails.learn(plain, plainBody); // known already: a miss, and the next fifteen tries skipped
    for (let i = 0; i < 15; i++) tails.learn(named(99), Buffer.from(JSON.stringify(named(99))));
    for (let i = 0; i < 7; i++) tails.learn(named(i), Buffer.from(JSON.stringify(named(i))));
    assert.ok(tails.parse(plainBody) !== null, 'eight tails, the first among them');
    tails.learn(named(7), Buffer.from(JSON.stringify(named(7))));
    assert.equal(tails.parse(plainBody), null, 'the ninth pushed it out');
  });

  it('reads the ordinary way whatever a known tail does not read exactly as JSON.parse would', () => {
    const tails = knowing();
    const refused = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{', // `{` then the envelope: no JSON at all
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{ \n',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"id":{"x":1', // the envelope would be the id's
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"extra":{"a":1',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x":1}', // a _meta of its own
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1',
      '{"__proto__":1,"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"',
      '{"params":{"name":"echo"},"jsonrpc":"2.0","id":1,"method":"tools/call"',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo\\',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","x":' ,
      '[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}',
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":${'['.repeat(300)}${']'.repeat(300)}`, // nested deeper than a request may
    ];
    for (const head of refused) assert.equal(tails.parse(Buffer.from(head + meta)), null, head);
    for (const other of [
      request({ name: 'a', _meta: { ...envelope, [META.clientInfo]: { name: 'other', version: '2' } } }),
      request({ name: 'a', _meta: { ...envelope, progressToken: 'p' } }),
    ]) {
      assert.equal(tails.parse(Buffer.from(JSON.stringify(other))), null);
    }
  });

  it('cuts no bytes a first-wins reader would read otherwise: a key twice, at any depth, or spelled with an escape', () => {
    const tails = knowing();
    for (const head of [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash","name":"echo"',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"echo"',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"repo":"secret","repo":"public"}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"list":[{"a":1,"a":2}]}',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\\u0061me":"crash","name":"echo"',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"x":1}',
    ]) {
      assert.equal(cut(tails, head + meta), null, head);
    }
    assert.ok(cut(tails, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":{"name":1},"b":{"name":2}}' + meta) !== null, 'one key in two objects is no key twice');
  });

  it('passes no number some reader reads otherwise than JSON.parse: past 15 characters, or with an exponent', () => {
    const call = (n: string): Buffer => Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":${n}}}}`);
    for (const n of ['0', '-1', '12.5', '999999999999999', '-99999999999999', '0.123456789012']) assert.equal(readAlikeByAll(call(n)), true, n);
    for (const n of ['9007199254740993', '1e400', '1E2', '2e-3', '0.1234567890123456', '-9999999999999999']) assert.equal(readAlikeByAll(call(n)), false, n);
    assert.equal(readAlikeByAll(Buffer.from('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}')), false, 'an id too');
    // An answer's numbers are not the gateway's to decide on: they pass as the backend wrote them.
    assert.ok(completeResultBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"n":9007199254740993,"e":1e400}}'), '1') !== null);
  });

  it('tells keys apart in objects of any size: same-length keys, a key twice past the first sixteen, in nested and sibling objects', () => {
    const tails = knowing();
    const head = (args: string): string => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":${args}`;
    const keys = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `"k${String(i + from).padStart(2, '0')}":${i}`);
    const passes = [
      '{"ab":1,"ba":2,"aa":3,"bb":4}', // same length, other bytes
      `{${keys(16).join(',')}}`,
      `{${keys(40).join(',')}}`,
      `{"a":{${keys(20).join(',')}},"b":{${keys(20).join(',')}},"c":[{${keys(17).join(',')}},{${keys(17).join(',')}}]}`,
      `{${keys(10).join(',')},"inner":{${keys(10).join(',')}},${keys(10, 10).join(',')}}`,
    ];
    for (const args of passes) assert.ok(cut(tails, head(args) + meta) !== null, args);
    const refused = [
      '{"ab":1,"ba":2,"ab":3}',
      `{${keys(16).join(',')},"k03":9}`, // past the sixteenth, the first among them
      `{${keys(20).join(',')},"k18":9}`, // past the sixteenth, both there
      `{${keys(10).join(',')},"inner":{${keys(10).join(',')}},${keys(10, 5).join(',')}}`, // after a nested object
      `{"a":[{${keys(30).join(',')},"k29":0}]}`,
    ];
    for (const args of refused) assert.equal(cut(tails, head(args) + meta), null, args);
  });

  it('after a request it could not learn from, skips the next fifteen: clients that never end so pay the try on few requests', () => {
    const tails = new EnvelopeTails();
    const notLast = request({ _meta: envelope, name: 'echo' });
    tails.learn(notLast, Buffer.from(JSON.stringify(notLast)));
    for (let i = 0; i < 15; i++) tails.learn(plain, plainBody);
    assert.equal(tails.parse(plainBody), null, 'skipped');
    tails.learn(plain, plainBody);
    assert.ok(tails.parse(plainBody) !== null, 'learned at the next try');
  });

  it('keeps the last eight envelopes, whatever clients send', () => {
    const tails = new EnvelopeTails();
    const named = (i: number): JsonRpcRequest => request({ name: 'echo', _meta: { ...envelope, [META.clientInfo]: { name: `client-${i}`, version: '1' } } });
    for (let i = 0; i < 20; i++) tails.learn(named(i), Buffer.from(JSON.stringify(named(i))));
    assert.equal(tails.parse(Buffer.from(JSON.stringify(named(11)))), null, 'the oldest are let go');
    for (let i = 12; i < 20; i++) assert.ok(read(tails, JSON.stringify(named(i))) !== null, `client-${i}`);
  });
});
