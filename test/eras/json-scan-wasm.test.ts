/**
 * The JSON scanner's two ways (core/protocol/json-scan.ts): the fast path, WebAssembly assembled
 * from json-scan.wat, and the general way in JavaScript, held to the same verdict and the same
 * end on generated JSON, the same with white space, and both mutated byte by byte; the binary
 * in the repository is what its source assembles to; what the fast path leaves undecided (many
 * keys, long bytes) still gets the general way's verdict through the exported functions.
 */
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { completeResultBytes, isPlainResult, plainResultAtGenerally } from '../../core/protocol/answer-bytes.ts';
import { EXACT_NUMBERS, KEYS, readAlikeByAll, readAlikeGenerally, skipValue, skipValueGenerally } from '../../core/protocol/json-scan.ts';
import { MAX_INPUT, readAlikeFast, skipValueFast, spelledResultFast, UNDECIDED } from '../../core/protocol/json-scan-wasm.ts';
import { REPO_ROOT } from '../tiers.ts';
import { assemble, WASM_MODULES } from '../helpers/wasm-assembly.ts';

/** A small deterministic generator (xorshift32): the same corpus every run. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

const KEY_WORDS = ['a', 'b', 'name', 'id', 'résumé', 'k\\u0061', 'x"y', 'n', 'text', '', 'jsonrpc', 'method', 'é', '\u{1F600}'];
const STRINGS = ['', 'hi', 'tools/call', 'a\\"b', 'tab\\t', '\\u00e9', '\\ud83d\\ude00', 'é', '日本', '\u{1F600}', '\\/', 'x\\\\'];
const NUMBERS = ['0', '-0', '1', '-1', '12.5', '999999999999999', '9007199254740993', '1e5', '1E+2', '-2e-3', '0.1234567890123456', '3.14159', '100'];

/** A JSON text with white space here and there, keys sometimes twice (depth at most 6). */
function jsonText(next: () => number, depth = 0): string {
  const space = (): string => (next() < 0.15 ? [' ', '\n', '\t', '\r\n  '][Math.floor(next() * 4)]! : '');
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const roll = next();
  if (depth < 6 && roll < 0.3) {
    const count = next() < 0.1 ? 15 + Math.floor(next() * 6) : Math.floor(next() * 5);
    const keys: string[] = [];
    for (let k = 0; k < count; k++) keys.push(next() < 0.08 && keys.length > 0 ? pick(keys) : next() < 0.5 ? pick(KEY_WORDS) : `k${k}`);
    return '{' + space() + keys.map((key) => `"${key}"${space()}:${space()}${jsonText(next, depth + 1)}${space()}`).join(',' + space()) + '}';
  }
  if (depth < 6 && roll < 0.45) {
    const count = Math.floor(next() * 5);
    return '[' + space() + Array.from({ length: count }, () => jsonText(next, depth + 1) + space()).join(',' + space()) + ']';
  }
  if (roll < 0.7) return `"${pick(STRINGS)}"`;
  if (roll < 0.9) return pick(NUMBERS);
  return pick(['true', 'false', 'null']);
}

/** `text`'s bytes changed once: a byte replaced, inserted or removed, or the bytes cut short. */
function mutated(next: () => number, bytes: Buffer): Buffer {
  const at = Math.floor(next() * bytes.length);
  const roll = next();
  const byte = next() < 0.5 ? Math.floor(next() * 256) : '{}[]",:\\ -0e.tfn\x00\x80\xc3\xed\xf4'.charCodeAt(Math.floor(next() * 21));
  if (roll < 0.4) {
    const copy = Buffer.from(bytes);
    copy[at] = byte;
    return copy;
  }
  if (roll < 0.7) return Buffer.concat([bytes.subarray(0, at), Buffer.from([byte]), bytes.subarray(at)]);
  if (roll < 0.9) return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
  return bytes.subarray(0, at);
}

/** Bodies to judge: generated, then each mutated. */
function corpus(seed: number, count: number): Buffer[] {
  const next = random(seed);
  const bodies: Buffer[] = [];
  for (let n = 0; n < count; n++) {
    const body = Buffer.from(jsonText(next));
    bodies.push(body);
    for (let m = 0; m < 4; m++) bodies.push(mutated(next, body));
  }
  return bodies;
}

describe('the JSON scanner: its fast path and its general way agree', () => {
  it('the binary in the repository is what its source assembles to (`npm run build:wasm`)', async () => {
    for (const { source, binary } of WASM_MODULES) {
      const committed = readFileSync(new URL(binary, `file://${REPO_ROOT}`));
      assert.ok((await assemble(source)).equals(committed), `${binary} is not what ${source} assembles to: run npm run build:wasm`);
    }
  });

  it('readAlikeByAll: the same verdict on 25,000 bodies, generated and mutated', () => {
    let decided = 0;
    let alike = 0;
    for (const body of corpus(0x5eed, 5000)) {
      const fast = readAlikeFast(body);
      const general = readAlikeGenerally(body);
      if (fast !== UNDECIDED) {
        decided++;
        assert.equal(fast === 1, general, `${JSON.stringify(body.toString('latin1'))}: the fast path says ${fast}`);
        if (general) alike++;
      }
      assert.equal(readAlikeByAll(body), general);
    }
    assert.ok(decided > 20_000, `the fast path decided ${decided}`);
    assert.ok(alike > 2000 && alike < decided - 2000, `both verdicts seen (${alike} alike of ${decided})`);
  });

  it('skipValue: the same end (or -1) for every check, at depths 0 and 2, where the bytes are UTF-8', () => {
    let compared = 0;
    for (const body of corpus(0xbeef, 2000)) {
      if (!isUtf8(body) || body.length === 0 || ' \n\r\t'.includes(String.fromCharCode(body[0]!))) continue;
      for (const checks of [0, KEYS, KEYS | EXACT_NUMBERS]) {
        for (const depth of [0, 2]) {
          const fast = skipValueFast(body, 0, body.length, depth, checks);
          if (fast === UNDECIDED) continue;
          compared++;
          assert.equal(fast, skipValueGenerally(body, 0, body.length, depth, checks), `${JSON.stringify(body.toString())} checks ${checks} depth ${depth}`);
        }
      }
    }
    assert.ok(compared > 40_000, `compared ${compared}`);
  });

  it('an answer spelled as SDKs spell it: the same result position (or -1) as the general loop, on 25,000 answers', () => {
    const next = random(0xa115);
    const ids = ['1', '7', '42', '"7"', '"abc"', '-1', '0', '"a\\"b"', 'null'];
    let decided = 0;
    let plain = 0;
    for (let n = 0; n < 5000; n++) {
      const roll = next();
      const result = roll < 0.7 ? `{"content":[{"type":"text","text":"x"}],"v":${jsonText(next)}}` : roll < 0.8 ? '{"resultType":"complete"}' : jsonText(next);
      const id = ids[Math.floor(next() * ids.length)]!;
      const asked = next() < 0.8 ? id : ids[Math.floor(next() * ids.length)]!;
      const answer = Buffer.from(next() < 0.5 ? `{"jsonrpc":"2.0","id":${id},"result":${result}}` : `{"result":${result},"jsonrpc":"2.0","id":${id}}`);
      for (const body of [answer, mutated(next, answer), mutated(next, answer), mutated(next, answer), Buffer.concat([answer, Buffer.from(next() < 0.5 ? ' \n' : ' x')])]) {
        const fast = spelledResultFast(body, asked);
        if (fast === UNDECIDED) continue;
        decided++;
        if (fast !== -1) plain++;
        assert.equal(fast, plainResultAtGenerally(body, asked), `${JSON.stringify(body.toString('latin1'))} for id ${asked}`);
      }
    }
    assert.ok(decided > 8000 && plain > 2000 && plain < decided - 2000, `${plain} plain of ${decided} decided`);
  });

  it('checks UTF-8 in strings as isUtf8 does: overlong forms, surrogates, past U+10FFFF, cut characters', () => {
    const good = ['c3a9', 'e282ac', 'f09f9880', 'f48fbfbf', 'ed9fbf', 'ee8080', 'c280', 'dfbf', 'e0a080'];
    const bad = ['c0af', 'c1bf', 'e080af', 'eda080', 'edbfbf', 'f08fbfbf', 'f4908080', 'f5808080', 'ff', '80', 'c3', 'e282', 'f09f98', 'c328', 'e228a1'];
    for (const hex of [...good, ...bad]) {
      const body = Buffer.concat([Buffer.from('["'), Buffer.from(hex, 'hex'), Buffer.from('"]')]);
      assert.equal(readAlikeFast(body) === 1, isUtf8(body), hex);
      assert.equal(readAlikeByAll(body), good.includes(hex), hex);
    }
  });

  it('leaves objects of more than sixteen keys to the general way, which tells their keys apart', () => {
    const keys = Array.from({ length: 40 }, (_, k) => `"key${k}":${k}`);
    const many = Buffer.from(`{"a":{${keys.join(',')}}}`);
    const twice = Buffer.from(`{"a":{${keys.join(',')},"key3":0}}`);
    assert.equal(readAlikeFast(many), UNDECIDED);
    assert.equal(readAlikeByAll(many), true);
    assert.equal(readAlikeByAll(twice), false);
    assert.equal(skipValue(twice, 0, twice.length, 0, 0), twice.length, 'without KEYS, decided by the fast path');
  });

  it('a scan given up midway leaves nothing the next one takes for its own (the Set of a many-keyed object)', () => {
    const keys = Array.from({ length: 17 }, (_, k) => `"k${k}":0`).join(',');
    const others = Array.from({ length: 15 }, (_, k) => `"p${k}":0`).join(',');
    const poisons = [
      () => isPlainResult(Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{${keys},"\\u0061":0}}`), '1'), // refused at its 18th key
      () => readAlikeByAll(Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":{${keys},"k3":0}}`)),
      () => readAlikeByAll(Buffer.from(`{"result":{${keys},"k3":0}}`)),
    ];
    for (const poison of poisons) {
      assert.equal(poison(), false);
      // A key twice, its first among the object's first sixteen, its second past them.
      assert.equal(isPlainResult(Buffer.from(`{"jsonrpc":"2.0","id":2,"result":{"isError":false,${others},"isError":true}}`), '2'), false);
      assert.equal(poison(), false);
      assert.equal(readAlikeByAll(Buffer.from(`{"jsonrpc":"2.0","id":2,"method":"m","params":{"name":"a",${others},"name":"b"}}`)), false);
      assert.equal(poison(), false);
      assert.equal(readAlikeByAll(Buffer.from(`{"result":{"name":"a",${others},"name":"b"}}`)), false);
    }
  });

  it('scans only bytes that are the buffer\'s and start a value; a pool slice is read at its own offset', () => {
    const pool = Buffer.from('xx[1,2]  {"a":1}yy');
    const slice = pool.subarray(2, 16); // '[1,2]  {"a":1}'
    assert.equal(skipValue(slice, 0, 5, 0, KEYS), 5);
    assert.equal(skipValue(slice, 7, slice.length, 0, KEYS), slice.length);
    assert.equal(skipValue(slice, 5, slice.length, 0, KEYS), -1, 'white space first: refused, as the general way does');
    assert.equal(skipValueFast(slice, 0, slice.length + 2, 0, 0), UNDECIDED, 'past the buffer: never the fast path');
    assert.equal(readAlikeByAll(slice), false);
    assert.equal(readAlikeByAll(pool.subarray(9, 16)), true);
  });

  it(`leaves bytes past ${MAX_INPUT / 1024} KiB to the general way, and holds no more than that`, () => {
    const long = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x'.repeat(MAX_INPUT) } } }));
    assert.equal(readAlikeFast(long), UNDECIDED);
    assert.equal(readAlikeByAll(long), true);
    assert.equal(readAlikeByAll(Buffer.concat([long.subarray(0, long.length - 2), Buffer.from(',"name":"x"}}')])), false, 'a key twice, past the fast path');
    const answer = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'y'.repeat(MAX_INPUT) }] } }));
    assert.equal(isPlainResult(answer, '1'), true);
  });

  it("an answer's result: its own resultType, a key twice or escaped anywhere in it, is read and written anew, by either way", () => {
    const many = Array.from({ length: 20 }, (_, k) => `"m${k}":${k}`).join(',');
    const cases: [string, boolean][] = [
      ['{"content":[{"type":"text","text":"a"}],"isError":false}', true],
      ['{"meta":{"resultType":"x"},"text":"resultType"}', true], // not the result's own
      ['{"resultType":"input_required"}', false],
      ['{"a":1, "resultType" :"complete"}', false],
      ['{"content":[{"type":"text","type":"image"}]}', false], // a key twice, deeper down
      ['{"content":[{"t\\u0079pe":"text"}]}', false], // a key spelled with an escape, deeper down
      [`{${many}}`, true],
      [`{${many},"resultType":"complete"}`, false],
      [`{${many},"m3":0}`, false],
      [`{"a":{${many},"m3":0}}`, false],
    ];
    for (const [result, plain] of cases) {
      for (const answer of [`{"jsonrpc":"2.0","id":7,"result":${result}}`, `{"result":${result},"jsonrpc":"2.0","id":7}`, `{ "id":7, "result":${result}, "jsonrpc":"2.0" }`]) {
        assert.equal(isPlainResult(Buffer.from(answer), '7'), plain, answer);
        assert.equal(completeResultBytes(Buffer.from(answer), '7') !== null, plain, answer);
      }
    }
    // Bytes that are not UTF-8 in the result, its keys few or many: never the client's as they came.
    for (const result of ['{"text":"\xff"}', `{${many},"text":"\xc3("}`]) {
      for (const answer of [`{"jsonrpc":"2.0","id":7,"result":${result}}`, `{"result":${result},"jsonrpc":"2.0","id":7}`]) {
        assert.equal(isPlainResult(Buffer.from(answer, 'latin1'), '7'), false, answer);
      }
    }
  });
});
