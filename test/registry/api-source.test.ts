/**
 * The API source reader (plugins/registry/sync/api-source.ts): it mirrors another registry
 * through the official MCP registry API v0.1.
 *
 * - Against a real Gatehouse registry as the peer (anonymous, memory database, a managed source,
 *   servers published over HTTP), seen through a recording proxy: a full read pages through more
 *   than 100 servers, a read with nothing new is `unchanged`, a publish and a delete are
 *   `changes`, the token is sent.
 * - Against a hostile scripted peer: cursor loops, oversize pages, bad JSON, wrong shapes, 5xx,
 *   429 with Retry-After, stalls, redirects to another origin, invalid items, private addresses,
 *   aborts and time bounds.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { SyncStatus } from '../../plugins/registry/store/records.ts';
import { createApiReader, type ApiReaderOptions } from '../../plugins/registry/sync/api-source.ts';
import { formatRevision, parseRevision, peerDigest, tailDigest } from '../../plugins/registry/sync/api-revision.ts';
import { SyncFailure, type ReadContext, type ReadOutcome, type SourceReader } from '../../plugins/registry/sync/source-reader.ts';
import { listItem, proxyTo, sendJson, startFakePeer, type FakePeer, type PeerRequest } from '../fixtures/registry-peer.ts';
import { startTestRegistry, type TestRegistry } from './helpers/registry.ts';

const TOKEN = 'peer-token-5ecret';

function context(revision: string | null = null, signal: AbortSignal = new AbortController().signal): ReadContext {
  // The reader reads nothing of the previous status but its revision.
  return { signal, previous: revision === null ? null : ({ revision } as unknown as SyncStatus) };
}

async function failureOf(reader: SourceReader, ctx: ReadContext = context()): Promise<string> {
  try {
    await reader.read(ctx);
  } catch (err) {
    assert.ok(err instanceof SyncFailure, `expected a SyncFailure, got ${String(err)}`);
    return err.message;
  }
  assert.fail('the read succeeded');
}

function names(outcome: ReadOutcome): string[] {
  assert.notEqual(outcome.type, 'unchanged');
  return outcome.type === 'unchanged' ? [] : outcome.items.map((item) => `${item.kind}:${item.name}@${item.version}`).sort();
}

const serverPath = (request: PeerRequest): boolean => request.path.endsWith('/v0.1/servers');

describe('an API source reading a real Gatehouse registry', () => {
  let peer: TestRegistry;
  let proxy: FakePeer;
  let reader: SourceReader;
  let firstRevision: string;
  const COUNT = 130;
  const serverName = (i: number): string => `io.acme.mirror/server-${String(i).padStart(3, '0')}`;

  before(async () => {
    peer = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: published, managed: {}}]
registries: [{name: main, sources: [published]}]
database: {type: memory}
`);
    for (let i = 0; i < COUNT; i++) {
      const res = await peer.request('POST', '/main/v0.1/publish', { body: { name: serverName(i), version: '1.0.0', description: `server ${i}` } });
      assert.equal(res.status, 201, res.text);
    }
    const skill = await peer.request('POST', '/main/v0.1/publish', { body: { type: 'skill', name: 'io.acme.mirror/notes', version: '0.1.0', description: 'notes' } });
    assert.equal(skill.status, 201, skill.text);
    proxy = await startFakePeer(proxyTo(peer.url));
    reader = createApiReader({ url: `${proxy.url}/main/`, token: TOKEN }, { allowPrivateAddresses: true });
  });
  after(async () => {
    await reader.close?.();
    await proxy.close();
    await peer.stop();
  });

  it('a first read is a snapshot of every server (paged 100 at a time) and skill, with the token sent', async () => {
    const outcome = await reader.read(context());
    assert.equal(outcome.type, 'snapshot');
    const all = names(outcome);
    assert.equal(all.length, COUNT + 1);
    assert.ok(all.includes(`server:${serverName(0)}@1.0.0`) && all.includes(`server:${serverName(COUNT - 1)}@1.0.0`));
    assert.ok(all.includes('skill:io.acme.mirror/notes@0.1.0'));
    const pages = proxy.requests.filter(serverPath);
    assert.equal(pages.length, 2, 'two pages of servers');
    assert.ok(pages.every((r) => r.query.get('limit') === '100' && !r.query.has('updated_since')));
    assert.equal(pages[0]!.query.get('cursor'), null);
    assert.ok((pages[1]!.query.get('cursor') ?? '') !== '');
    assert.ok(proxy.requests.every((r) => r.authorization === `Bearer ${TOKEN}`));
    assert.ok(outcome.type === 'snapshot' && outcome.revision !== null && outcome.revision !== undefined && outcome.skipped.length === 0);
    firstRevision = (outcome as { revision: string }).revision;
    assert.ok(parseRevision(firstRevision) !== null, firstRevision);
  });

  it('a second read with nothing new is unchanged, asking for what changed since the high-water mark', async () => {
    proxy.requests.length = 0;
    const outcome = await reader.read(context(firstRevision));
    assert.deepEqual(outcome, { type: 'unchanged', revision: firstRevision });
    const pages = proxy.requests.filter(serverPath);
    assert.ok(pages.length >= 1);
    assert.ok(pages.every((r) => r.query.get('include_deleted') === 'true' && r.query.get('updated_since') !== null));
    const since = Date.parse(pages[0]!.query.get('updated_since')!);
    assert.equal(since, parseRevision(firstRevision)!.highWaterMs - 60_000, 'the high-water mark minus the overlap');
  });

  it('a publish on the peer is a change', async () => {
    const res = await peer.request('POST', '/main/v0.1/publish', { body: { name: 'io.acme.mirror/newcomer', version: '2.0.0', description: 'new' } });
    assert.equal(res.status, 201, res.text);
    const outcome = await reader.read(context(firstRevision));
    assert.equal(outcome.type, 'changes');
    assert.ok(names(outcome).includes('server:io.acme.mirror/newcomer@2.0.0'));
    assert.ok(outcome.type === 'changes' && parseRevision(outcome.revision)!.highWaterMs >= parseRevision(firstRevision)!.highWaterMs);
  });

  it('a delete on the peer is a removal (the peer reports tombstones with include_deleted)', async () => {
    const before = await reader.read(context(firstRevision));
    const revision = before.type === 'unchanged' ? firstRevision : (before.revision as string);
    const res = await peer.request('DELETE', `/main/v0.1/servers/${encodeURIComponent(serverName(7))}/versions/1.0.0`);
    assert.equal(res.status, 200, res.text);
    await peer.request('POST', '/main/v0.1/publish', { body: { name: 'io.acme.mirror/another', version: '1.0.0', description: 'another' } });
    const outcome = await reader.read(context(revision));
    assert.equal(outcome.type, 'changes');
    if (outcome.type !== 'changes') return;
    assert.ok(names(outcome).includes('server:io.acme.mirror/another@1.0.0'));
    assert.ok(!names(outcome).includes(`server:${serverName(7)}@1.0.0`));
    assert.deepEqual(outcome.removed.filter((r) => r.name === serverName(7)), [{ kind: 'server', name: serverName(7), version: '1.0.0' }]);
  });

  it('a full read again after the full-sync period, and when the revision is of another peer or unreadable', async () => {
    const current = parseRevision(firstRevision)!;
    const stale = formatRevision({ ...current, fullAtMs: Date.now() - 25 * 3600_000 });
    const otherPeer = formatRevision({ ...current, peer: peerDigest('https://elsewhere.example') });
    for (const revision of [stale, otherPeer, 'a1b2c3 (a git commit)']) {
      proxy.requests.length = 0;
      const outcome = await reader.read(context(revision));
      assert.equal(outcome.type, 'snapshot', revision);
      assert.ok(proxy.requests.filter(serverPath).every((r) => !r.query.has('updated_since')));
    }
  });
});

describe('an API source reading a hostile peer', () => {
  let peer: FakePeer;
  let other: FakePeer;
  const readers: SourceReader[] = [];
  const readerOf = (options: ApiReaderOptions = {}, url = peer.url): SourceReader => {
    const reader = createApiReader({ url, token: TOKEN }, { allowPrivateAddresses: true, requestTimeoutMs: 2000, ...options });
    readers.push(reader);
    return reader;
  };
  /** Servers answered per path, skills always 404 (a peer that serves servers only). */
  const serve = (servers: (request: PeerRequest, res: ServerResponse) => void): void =>
    peer.handle((request, res) => (serverPath(request) ? servers(request, res) : sendJson(res, 404, { error: 'not found' })));
  const page = (items: unknown[], nextCursor?: unknown): object => ({ servers: items, metadata: nextCursor === undefined ? { count: items.length } : { nextCursor, count: items.length } });
  const server = (name: string, version = '1.0.0'): Record<string, unknown> => ({ name, version, description: name });

  before(async () => {
    peer = await startFakePeer((_r, res) => sendJson(res, 404, {}));
    other = await startFakePeer((_r, res) => sendJson(res, 200, page([listItem(server('io.evil/x'))])));
  });
  after(async () => {
    for (const reader of readers) await reader.close?.();
    await peer.close();
    await other.close();
  });

  it('invalid items are skipped and named; the others are read; deleted ones are not in a snapshot', async () => {
    serve((request, res) => {
      if (request.query.get('cursor') === null) return sendJson(res, 200, page([listItem(server('io.ok/one')), 'not an item', { _meta: {} }], 'p2'));
      sendJson(
        res,
        200,
        page([
          listItem(server('io.ok/two', '2.0.0')),
          listItem(server('../etc', '1.0.0')),
          listItem(server('io.bad/version', '^1.0.0')),
          listItem(server('io.bad/status'), { status: 'suspended' }),
          listItem(server('io.gone/one'), { status: 'deleted' }),
          listItem(server('io.ok/deprecated'), { status: 'deprecated' }),
        ]),
      );
    });
    const outcome = await readerOf().read(context());
    assert.equal(outcome.type, 'snapshot');
    assert.deepEqual(names(outcome), ['server:io.ok/deprecated@1.0.0', 'server:io.ok/one@1.0.0', 'server:io.ok/two@2.0.0']);
    const skipped = outcome.type === 'snapshot' ? outcome.skipped : [];
    assert.equal(skipped.length, 5, skipped.join('\n'));
    assert.match(skipped[0]!, /^page 1 item 2: must be an object/);
    assert.match(skipped[1]!, /^page 1 item 3: "server" must be an object/);
    assert.match(skipped[2]!, /^page 2 item 2: name "\.\.\/etc" is not valid/);
    assert.match(skipped[3]!, /^page 2 item 3: version "\^1\.0\.0" is a range/);
    assert.match(skipped[4]!, /^page 2 item 4 \(io\.bad\/status 1\.0\.0\): its status must be active, deprecated or deleted/);
  });

  it('a cursor loop fails the read, naming the page', async () => {
    serve((request, res) => sendJson(res, 200, page([listItem(server(`io.loop/p${request.query.get('cursor') ?? 0}`))], 'again')));
    const message = await failureOf(readerOf());
    assert.match(message, /^servers page 2 \(http:\/\/127\.0\.0\.1:\d+\/v0\.1\/servers\): metadata\.nextCursor is a cursor already followed: the pages loop$/);
  });

  it('a page over the size bound fails the read (declared or streamed)', async () => {
    const big = page(Array.from({ length: 50 }, (_, i) => listItem(server(`io.big/s${i}`))));
    serve((_r, res) => sendJson(res, 200, big, { 'content-length': String(Buffer.byteLength(JSON.stringify(big))) }));
    assert.match(await failureOf(readerOf({ maxPageBytes: 1024 })), /^servers page 1 .*: the answer is \d+ bytes, over the bound of 1024 bytes per page$/);
    serve((_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const text = JSON.stringify(big);
      for (let i = 0; i < text.length; i += 500) res.write(text.slice(i, i + 500));
      res.end();
    });
    assert.match(await failureOf(readerOf({ maxPageBytes: 1024 })), /^servers page 1 .*: the answer is over the bound of 1024 bytes per page$/);
  });

  it('an answer that is not JSON, or not the list shape, fails the read', async () => {
    serve((_r, res) => sendJson(res, 200, '<html>oops</html>'));
    assert.match(await failureOf(readerOf()), /^servers page 1 .*: the answer is not JSON/);
    serve((_r, res) => sendJson(res, 200, { servers: { a: 1 } }));
    assert.match(await failureOf(readerOf()), /: the answer is not a list: expected \{"servers": \[\.\.\.\]/);
    serve((_r, res) => sendJson(res, 200, page([], 42)));
    assert.match(await failureOf(readerOf()), /: metadata\.nextCursor must be a string$/);
    serve((_r, res) => {
      res.writeHead(200);
      res.end(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    });
    assert.match(await failureOf(readerOf()), /: the answer is not UTF-8 text$/);
  });

  it('a 500 fails the read; a 401 says the token was refused', async () => {
    serve((_r, res) => sendJson(res, 500, { error: 'boom' }));
    assert.match(await failureOf(readerOf()), /^servers page 1 .*: the peer answered 500$/);
    serve((_r, res) => sendJson(res, 401, { error: 'bad token' }));
    assert.match(await failureOf(readerOf()), /answered 401 \(the peer refused the token/);
  });

  it('429 with Retry-After is retried after the wait, within the time bound', async () => {
    let calls = 0;
    serve((_r, res) => (++calls === 1 ? sendJson(res, 429, { error: 'slow down' }, { 'retry-after': '1' }) : sendJson(res, 200, page([listItem(server('io.ok/after-wait'))]))));
    const started = Date.now();
    const outcome = await readerOf().read(context());
    assert.ok(Date.now() - started >= 950, 'waited for Retry-After');
    assert.deepEqual(names(outcome), ['server:io.ok/after-wait@1.0.0']);
    serve((_r, res) => sendJson(res, 503, {}, { 'retry-after': '3600' }));
    const quick = Date.now();
    assert.match(await failureOf(readerOf({ syncTimeoutMs: 10_000 })), /answered 503 and asks to retry in 3600 s, past the sync's time bound/);
    assert.ok(Date.now() - quick < 2000, 'does not wait for a retry it cannot make');
  });

  it('a peer slower than the request timeout fails the read; so does one past the whole read bound', async () => {
    serve(() => undefined); // never answers
    assert.match(await failureOf(readerOf({ requestTimeoutMs: 300 })), /^servers page 1 .*: the peer did not answer within 0\.3 s$/);
    let n = 0;
    serve((_r, res) => void setTimeout(() => sendJson(res, 200, page([listItem(server(`io.slow/s${n}`))], `c${++n}`)), 150));
    assert.match(await failureOf(readerOf({ requestTimeoutMs: 1000, syncTimeoutMs: 600 })), /took longer than 0\.6 s$/);
  });

  it('the read stops when its signal is aborted', async () => {
    serve(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    assert.match(await failureOf(readerOf({ requestTimeoutMs: 5000 }), context(null, controller.signal)), /was stopped/);
  });

  it('a redirect to another origin is not followed (the token never goes there); one on the same origin is', async () => {
    other.requests.length = 0;
    serve((_r, res) => {
      res.writeHead(302, { location: `${other.url}/v0.1/servers` });
      res.end();
    });
    assert.match(await failureOf(readerOf()), /the peer redirected \(302\) to another origin, http:\/\/127\.0\.0\.1:\d+: not followed/);
    assert.equal(other.requests.length, 0);

    peer.requests.length = 0;
    peer.handle((request, res) => {
      if (request.path === '/v0.1/servers') {
        res.writeHead(307, { location: `/moved/v0.1/servers?limit=100` });
        return void res.end();
      }
      if (request.path === '/moved/v0.1/servers') return sendJson(res, 200, page([listItem(server('io.ok/moved'))]));
      sendJson(res, 404, {});
    });
    assert.deepEqual(names(await readerOf().read(context())), ['server:io.ok/moved@1.0.0']);
    assert.ok(peer.requests.filter((r) => r.path.endsWith('/servers')).every((r) => r.authorization === `Bearer ${TOKEN}`));
  });

  it('the token never appears in a message, even when the peer echoes it', async () => {
    serve((_r, res) => sendJson(res, 200, `{"servers": ${TOKEN}}`));
    const message = await failureOf(readerOf());
    assert.ok(!message.includes(TOKEN), message);
    serve((_r, res) => sendJson(res, 200, page([listItem({ ...server(`io.echo/${TOKEN}`), description: 'd'.repeat(101) })])));
    const outcome = await readerOf().read(context());
    const skipped = outcome.type === 'snapshot' ? outcome.skipped : [];
    assert.equal(skipped.length, 1);
    assert.ok(!skipped[0]!.includes(TOKEN) && skipped[0]!.includes('[token]'), skipped[0]);
  });

  it('messages about items stay short whatever the peer sends', async () => {
    // 100,000 levels of nesting: JSON.parse takes it, anything recursive over it would not.
    const deep = `${'['.repeat(100_000)}"x"${']'.repeat(100_000)}`;
    const huge = JSON.stringify(listItem({ ...server(`io.long/${'n'.repeat(5000)}`), ['k'.repeat(5000)]: 1 }));
    const deepStatus = `{"server": ${JSON.stringify(server('io.deep/status'))}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": ${deep}}}}`;
    const deepDocument = `{"server": {"name": "io.deep/doc", "version": "1.0.0", "deep": ${deep}}}`;
    serve((_r, res) => sendJson(res, 200, `{"servers": [${huge}, ${deepStatus}, ${deepDocument}]}`));
    const outcome = await readerOf().read(context());
    const skipped = outcome.type === 'snapshot' ? outcome.skipped : [];
    assert.equal(skipped.length, 3, skipped.join('\n'));
    assert.ok(skipped.every((message) => message.length <= 401), skipped.join('\n'));
    assert.match(skipped[1]!, /status must be active, deprecated or deleted \(got a list\)/);
    assert.match(skipped[2]!, /nested more than 32 levels deep/);
  });

  it('more items than the read allows fail it', async () => {
    serve((_r, res) => sendJson(res, 200, page(Array.from({ length: 6 }, (_, i) => listItem(server(`io.many/s${i}`))))));
    assert.match(await failureOf(readerOf({ maxItems: 5 })), /lists more than 5 items/);
  });

  it('a peer that refuses updated_since (400) gets a full read', async () => {
    serve((request, res) => (request.query.has('updated_since') ? sendJson(res, 400, { error: 'unknown parameter' }) : sendJson(res, 200, page([listItem(server('io.ok/full'))]))));
    const revision = formatRevision({ highWaterMs: Date.parse('2026-01-01T00:00:00Z'), fullAtMs: Date.now(), tail: tailDigest([]), peer: peerDigest(`${peer.url}/`) });
    peer.requests.length = 0;
    const outcome = await readerOf().read(context(revision));
    assert.equal(outcome.type, 'snapshot');
    assert.deepEqual(names(outcome), ['server:io.ok/full@1.0.0']);
    assert.deepEqual(
      peer.requests.filter(serverPath).map((r) => r.query.has('updated_since')),
      [true, false],
      'asked for changes first, then read everything',
    );
  });

  it('incremental reads: newer versions are items, deleted ones removed; the same tail again is unchanged', async () => {
    const t0 = '2026-02-01T10:00:00.000Z';
    const t1 = '2026-02-01T10:05:00.000Z';
    let phase = 0;
    serve((request, res) => {
      if (!request.query.has('updated_since')) return sendJson(res, 200, page([listItem(server('io.inc/a'), { updatedAt: t0 }), listItem(server('io.inc/b'), { updatedAt: t0 })]));
      assert.equal(request.query.get('include_deleted'), 'true');
      if (phase === 0) return sendJson(res, 200, page([listItem(server('io.inc/a'), { updatedAt: t0 }), listItem(server('io.inc/b'), { updatedAt: t0 })]));
      sendJson(res, 200, page([listItem(server('io.inc/a'), { updatedAt: t0 }), listItem({ name: 'io.inc/b', version: '1.0.0' }, { updatedAt: t1, status: 'deleted' }) /* a tombstone needs only its name and version */, listItem(server('io.inc/c'), { updatedAt: t1 })]));
    });
    const reader = readerOf();
    const first = await reader.read(context());
    assert.equal(first.type, 'snapshot');
    const revision = (first as { revision: string }).revision;
    assert.equal(parseRevision(revision)!.highWaterMs, Date.parse(t0));
    assert.deepEqual(await reader.read(context(revision)), { type: 'unchanged', revision });
    phase = 1;
    const changed = await reader.read(context(revision));
    assert.equal(changed.type, 'changes');
    if (changed.type !== 'changes') return;
    assert.deepEqual(names(changed), ['server:io.inc/a@1.0.0', 'server:io.inc/c@1.0.0']);
    assert.deepEqual(changed.removed, [{ kind: 'server', name: 'io.inc/b', version: '1.0.0' }]);
    assert.equal(parseRevision(changed.revision)!.highWaterMs, Date.parse(t1));
    assert.equal(parseRevision(changed.revision)!.fullAtMs, parseRevision(revision)!.fullAtMs, 'the last full read stays the same');
    assert.deepEqual(await reader.read(context(changed.revision)), { type: 'unchanged', revision: changed.revision });
  });

  it('a late change inside the overlap window (an earlier time than the mark) is seen', async () => {
    const mark = '2026-03-01T12:00:00.000Z';
    const earlier = '2026-03-01T11:59:50.000Z';
    let late = false;
    serve((_r, res) => sendJson(res, 200, page([listItem(server('io.win/a'), { updatedAt: mark }), ...(late ? [listItem(server('io.win/late'), { updatedAt: earlier })] : [])])));
    const reader = readerOf();
    const first = (await reader.read(context())) as { revision: string };
    late = true;
    const outcome = await reader.read(context(first.revision));
    assert.equal(outcome.type, 'changes');
    assert.ok(names(outcome).includes('server:io.win/late@1.0.0'));
  });

  it('private and loopback addresses are refused unless allowed, and plain http with them', async () => {
    const guarded = (url: string): SourceReader => readerOf({ allowPrivateAddresses: false }, url);
    assert.match(await failureOf(guarded('https://127.0.0.1:9/')), /refusing to connect to 127\.0\.0\.1:9: 127\.0\.0\.1 is a loopback address \(only sources defined in the config file/);
    assert.match(await failureOf(guarded('https://10.1.2.3/')), /10\.1\.2\.3 is a private or non-public address/);
    assert.match(await failureOf(guarded('https://[::ffff:192.168.1.1]/')), /::ffff:c0a8:101 is a private or non-public address/);
    assert.match(await failureOf(guarded('https://localhost:9/')), /refusing to connect to localhost: (127\.0\.0\.1|::1) is a loopback address/);
    assert.throws(() => createApiReader({ url: peer.url, token: null }), (err: unknown) => err instanceof SyncFailure && /must use https/.test(err.message));
    assert.throws(() => createApiReader({ url: 'https://user:pw@example.com', token: null }), (err: unknown) => err instanceof SyncFailure && /user name or password/.test(err.message) && !err.message.includes('pw'));
    assert.throws(() => createApiReader({ url: 'ftp://example.com', token: null }), /http\(s\) URL/);
  });
});
