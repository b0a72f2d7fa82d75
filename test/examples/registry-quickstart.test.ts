/**
 * The registry quick start of the root README.md, run as written: the registry server on
 * examples/registry/registry.yaml (copied with its catalog.json to a temporary directory, so its
 * embedded store is written there, and on a free port instead of 8080), then each `curl` of the
 * README's block, parsed from the README and sent as curl would send it. The publish is a
 * standard server.json (`remotes: [{type: "streamable-http", url}]`, no top-level `url`): the
 * registry accepts it (201) and serves it as published, so a client reads where to connect at
 * `remotes[0].url`.
 */
import assert from 'node:assert/strict';
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { startTestRegistry, tempDir, type TestRegistry } from '../registry/helpers/registry.ts';

interface Curl {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly data: string | undefined;
}

/**
 * The shell words of each command of a `sh` block: `\` and a newline continue a line, quotes
 * (single or double, no escapes inside: the README uses none) may span lines, `#` at a word's
 * start comments to the end of the line.
 */
function commands(block: string): string[][] {
  const out: string[][] = [];
  let words: string[] = [];
  let word: string | null = null;
  const endWord = (): void => {
    if (word !== null) words.push(word);
    word = null;
  };
  const endCommand = (): void => {
    endWord();
    if (words.length > 0) out.push(words);
    words = [];
  };
  for (let i = 0; i < block.length; i++) {
    const c = block[i]!;
    if (c === '\\' && block[i + 1] === '\n') i++;
    else if (c === "'" || c === '"') {
      const close = block.indexOf(c, i + 1);
      assert.ok(close > i, `an unclosed ${c} in the README's block`);
      word = (word ?? '') + block.slice(i + 1, close);
      i = close;
    } else if (c === '#' && word === null) {
      while (i + 1 < block.length && block[i + 1] !== '\n') i++;
    } else if (c === '\n') endCommand();
    else if (c === ' ' || c === '\t') endWord();
    else word = (word ?? '') + c;
  }
  endCommand();
  return out;
}

/** A curl command's request (the options the README uses: -X, -H, -d). */
function curlRequest(words: readonly string[]): Curl {
  let method: string | null = null;
  let url: string | null = null;
  let data: string | undefined;
  const headers: Record<string, string> = {};
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === '-X') method = words[++i]!;
    else if (word === '-H') {
      const [name, ...value] = words[++i]!.split(':');
      headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (word === '-d') data = words[++i]!;
    else if (word.startsWith('-')) assert.fail(`the README's curl uses ${word}, which this test does not know`);
    else url = word;
  }
  assert.ok(url !== null, `a curl without a URL: ${words.join(' ')}`);
  return { method: method ?? (data === undefined ? 'GET' : 'POST'), url, headers, data };
}

/** The README's registry quick start block. */
async function quickStartBlock(): Promise<string> {
  const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  const block = blocks.find((text) => text.includes('registry serve --config examples/registry/registry.yaml'));
  assert.ok(block !== undefined, 'the README has the registry quick start');
  return block;
}

let registry: TestRegistry;
let curls: Curl[];
const answers: { curl: Curl; status: number; body: any }[] = [];

before(async () => {
  const block = await quickStartBlock();
  const lines = commands(block);
  const serve = lines.find((words) => words.includes('serve'));
  assert.deepEqual(serve?.slice(-3), ['serve', '--config', 'examples/registry/registry.yaml']);
  curls = lines.filter((words) => words[0] === 'curl').map(curlRequest);
  const dir = await tempDir();
  await copyFile(join(REPO_ROOT, 'examples/registry/catalog.json'), join(dir, 'catalog.json'));
  registry = await startTestRegistry(await readFile(join(REPO_ROOT, 'examples/registry/registry.yaml'), 'utf8'), dir);
  for (const curl of curls) {
    // The README's server listens on 8080; this one on a free port.
    assert.ok(curl.url.startsWith('http://127.0.0.1:8080/'), curl.url);
    const res = await fetch(curl.url.replace('http://127.0.0.1:8080', registry.url), { method: curl.method, headers: curl.headers, ...(curl.data === undefined ? {} : { body: curl.data }) });
    answers.push({ curl, status: res.status, body: await res.json() });
  }
});
after(async () => {
  await registry?.stop();
});

describe('the registry quick start (README.md), as written', () => {
  it('every request succeeds', () => {
    assert.ok(curls.length >= 5, `the block has its curls (${curls.length})`);
    for (const { curl, status, body } of answers) assert.ok(status === 200 || status === 201, `${curl.method} ${curl.url}: ${status} ${JSON.stringify(body)}`);
  });

  it('publishes a standard server.json: remotes[], no top-level url', () => {
    const publish = answers.find((a) => a.curl.method === 'POST')!;
    assert.equal(publish.status, 201);
    const sent = JSON.parse(publish.curl.data!);
    assert.equal(sent.url, undefined, 'the quick start sends no top-level url');
    assert.deepEqual(sent.remotes, [{ type: 'streamable-http', url: 'https://hello.example.com/mcp' }]);
    assert.deepEqual(publish.body.server, sent, 'stored and served as published');
  });

  it('serves it with remotes[0].url, where a client connects, in the list and by version', () => {
    const list = answers.find((a) => a.curl.url.includes('/servers?'))!;
    const hello = list.body.servers.find((item: any) => item.server.name === 'io.github.me/hello');
    assert.equal(hello.server.remotes[0].url, 'https://hello.example.com/mcp');
    assert.equal(hello.server.remotes[0].type, 'streamable-http');
    const latest = answers.find((a) => a.curl.url.endsWith('/versions/latest'))!;
    assert.equal(latest.body.server.remotes[0].url, 'https://hello.example.com/mcp');
    assert.equal(latest.body._meta['io.modelcontextprotocol.registry/official'].isLatest, true);
  });

  it('the example catalog is synced: its servers, its skill in the one skill shape, the source ok', () => {
    const list = answers.find((a) => a.curl.url.includes('/servers?'))!;
    assert.deepEqual(list.body.servers.map((item: any) => item.server.name).sort(), ['io.github.acme/filesystem', 'io.github.acme/weather', 'io.github.me/hello']);
    const skills = answers.find((a) => a.curl.url.endsWith('/skills'))!;
    assert.deepEqual(skills.body.skills.map((item: any) => [item.skill.namespace, item.skill.name]), [['io.github.acme', 'pdf-report']]);
    const source = answers.find((a) => a.curl.url.endsWith('/v1/sources/catalog'))!;
    assert.equal(source.body.status.phase, 'ok');
  });
});
