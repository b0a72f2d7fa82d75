/**
 * A manageSources caller who is not the operator, attacking through the sources the admin API
 * lets them create (git, api, file): what they name must not reach the server's own network,
 * read the server's files, or keep the syncs busy. Real sockets and real parts: a registry
 * server started from its config, git itself, listeners on loopback standing for internal hosts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestRegistry, tempDir, type TestRegistry } from '../registry/helpers/registry.ts';

interface Status {
  phase: string;
  message: string | null;
  servers: number;
  failedAttempts: number;
}

/** A TCP listener on loopback standing for an internal service: it counts who connects. */
async function internalHost(): Promise<{ server: Server; port: number; connections: () => number; close(): Promise<void> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

describe('git sources created through the admin API stay on public addresses', () => {
  let registry: TestRegistry;
  let internal: Awaited<ReturnType<typeof internalHost>>;
  const sync = async (name: string) => (await registry.request('POST', `/v1/sources/${name}/sync`)).json<{ status: Status }>().status;

  before(async () => {
    internal = await internalHost();
    registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
database: {type: memory}
`);
  });
  after(async () => {
    await registry?.stop();
    await internal?.close();
  });

  it('a repository address that Node and git read as different hosts is refused before git runs', async () => {
    // Node's URL reads the host as 93.184.216.34 (a public address, so it is "pinned"); git and
    // curl read "93.184.216.34\" as a user name and connect to 127.0.0.1.
    for (const [name, repository] of [
      ['backslash', `https://93.184.216.34\\@127.0.0.1:${internal.port}/x.git`],
      ['backslash-port', `https://93.184.216.34:443\\@127.0.0.1:${internal.port}/x.git`],
    ] as const) {
      const put = await registry.request('PUT', `/v1/sources/${name}`, { body: { git: { repository, path: 'servers.json' }, syncPolicy: { interval: '1h' } } });
      assert.ok(put.status === 201 || put.status === 400, put.text);
      if (put.status === 400) continue;
      const status = await sync(name);
      assert.equal(status.phase, 'failed', JSON.stringify(status));
      assert.match(status.message ?? '', /written plainly/);
    }
    assert.equal(internal.connections(), 0, 'git reached the internal host');
  });

  it('a pinned read does not go through a proxy (the proxy would resolve the name itself)', async () => {
    let proxied = 0;
    const proxy = createHttpServer((_req, res) => {
      proxied++;
      res.writeHead(502).end();
    });
    proxy.on('connect', (_req, socket: Socket) => {
      proxied++;
      socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, https_proxy: process.env.https_proxy };
    process.env.HTTPS_PROXY = process.env.https_proxy = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    try {
      const put = await registry.request('PUT', '/v1/sources/proxied', { body: { git: { repository: 'https://93.184.216.34:1/x.git', path: 'servers.json' }, syncPolicy: { interval: '1h' } } });
      assert.equal(put.status, 201, put.text);
      const status = await sync('proxied');
      assert.equal(status.phase, 'failed');
      assert.equal(proxied, 0, 'the read went through the proxy');
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});

describe('a source created through the admin API cannot sync in a tight loop', () => {
  let registry: TestRegistry;
  let peer: ReturnType<typeof createHttpServer>;
  let peerRequests = 0;

  before(async () => {
    peer = createHttpServer((_req, res) => {
      peerRequests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"servers": [], "metadata": {"count": 0}}');
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    registry = await startTestRegistry(`auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
sync: {allowPrivateAddresses: true}
database: {type: memory}
`);
  });
  after(async () => {
    await registry?.stop();
    await new Promise<void>((resolve) => peer.close(() => resolve()));
  });

  it('an interval under a minute is refused (a 10 ms interval would hit the peer a hundred times a second, forever)', async () => {
    const url = `http://127.0.0.1:${(peer.address() as { port: number }).port}`;
    const put = await registry.request('PUT', '/v1/sources/hammer', { body: { api: { url }, syncPolicy: { interval: '10ms' } } });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.ok(peerRequests <= 4, `the peer got ${peerRequests} requests in a second`);
    assert.equal(put.status, 400, put.text);
    assert.match(put.json().error_description ?? '', /syncPolicy\.interval.*at least 1m/);
    const minute = await registry.request('PUT', '/v1/sources/paced', { body: { api: { url }, syncPolicy: { interval: '1m' } } });
    assert.equal(minute.status, 201, minute.text);
  });
});

describe('file sources created through the admin API read only files under sync.fileRoot', () => {
  let registry: TestRegistry;
  let root: string;
  let outside: string;
  const fifos: string[] = [];
  const sync = async (name: string) => {
    const res = await Promise.race([registry.request('POST', `/v1/sources/${name}/sync`), new Promise<null>((resolve) => setTimeout(resolve, 8_000, null).unref())]);
    assert.ok(res !== null, 'the sync did not end within 8 s');
    return res.json<{ status: Status }>().status;
  };
  const names = async (source: string) =>
    (await registry.request('GET', `/v1/sources/${source}/entries`)).json<{ entries: { name: string }[] }>().entries.map((entry) => entry.name);

  before(async () => {
    const dir = await tempDir();
    root = join(dir, 'catalogs');
    outside = join(dir, 'private');
    await mkdir(root);
    await mkdir(outside);
    await writeFile(join(outside, 'secret.json'), JSON.stringify({ data: { servers: [{ name: 'io.secret/internal-tool', version: '1.0.0', description: 'not for callers' }] } }));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
sync: {fileRoot: ./catalogs}
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    // A reader blocked in open() on a FIFO is released by a writer.
    for (const fifo of fifos) await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then((handle) => handle.close()).catch(() => {});
    await registry?.stop();
  });

  it('a file swapped for a symbolic link out of the root after the PUT is not read', async () => {
    const path = join(root, 'team.json');
    await writeFile(path, JSON.stringify({ data: { servers: [{ name: 'io.team/tool', version: '1.0.0', description: 'the team tool' }] } }));
    const put = await registry.request('PUT', '/v1/sources/team', { body: { file: { path }, syncPolicy: { interval: '1h' } } });
    assert.equal(put.status, 201, put.text);
    assert.equal((await sync('team')).phase, 'ok');
    await rm(path);
    await symlink(join(outside, 'secret.json'), path);
    // A sync asked for joins one under way (the source's first, scheduled at the PUT, may start
    // late on a busy machine and read the file before the swap): the second surely starts after it.
    await sync('team');
    assert.deepEqual(await names('team'), ['io.team/tool'], 'a file outside sync.fileRoot was read');
    const status = await sync('team');
    assert.deepEqual(await names('team'), ['io.team/tool'], 'a file outside sync.fileRoot was read');
    assert.equal(status.phase, 'failed');
    assert.match(status.message ?? '', /sync\.fileRoot/);
  });

  it('a FIFO under the root fails at once instead of holding a thread of the process for ever', async () => {
    for (let i = 0; i < 5; i++) {
      const fifo = join(root, `pipe-${i}.json`);
      await new Promise<void>((resolve, reject) => execFile('mkfifo', [fifo], (err) => (err === null ? resolve() : reject(err))));
      fifos.push(fifo);
      const put = await registry.request('PUT', `/v1/sources/pipe-${i}`, { body: { file: { path: fifo }, syncPolicy: { interval: '1h' } } });
      assert.equal(put.status, 201, put.text);
      const status = await sync(`pipe-${i}`);
      assert.equal(status.phase, 'failed');
      assert.match(status.message ?? '', /not a regular file/);
    }
  });

  it('an invalid item is named in a short line, however long what it holds', async () => {
    const path = join(root, 'bloated.json');
    // Each invalid variable is named by its JSON path, and so by its key: here 100 KB long.
    const variables = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`v${i}${'x'.repeat(100_000)}`, 1]));
    const bloated = { name: 'io.team/bloated', version: '1.0.0', description: 'x', remotes: [{ type: 'streamable-http', url: 'https://x.example.com/mcp', variables }] };
    await writeFile(path, JSON.stringify({ data: { servers: Array(50).fill(bloated) } }));
    assert.equal((await registry.request('PUT', '/v1/sources/bloated', { body: { file: { path }, syncPolicy: { interval: '1h' } } })).status, 201);
    assert.equal((await sync('bloated')).phase, 'ok');
    const shown = await registry.request('GET', '/v1/sources/bloated');
    assert.ok(shown.text.length < 20_000, `the source's status is ${shown.text.length} bytes`);
    const skipped = shown.json<{ status: { skipped: string[]; skippedCount: number } }>().status.skipped;
    assert.ok(skipped.length > 0 && skipped.every((line) => line.length <= 401), 'each skipped item is named in at most 400 characters');
  });

  it('the status of a file that is not JSON does not quote it', async () => {
    const path = join(root, 'notes.json');
    await writeFile(path, 'db_password=SECRET-hunter2 and the rest of the file');
    assert.equal((await registry.request('PUT', '/v1/sources/notes', { body: { file: { path }, syncPolicy: { interval: '1h' } } })).status, 201);
    const status = await sync('notes');
    assert.equal(status.phase, 'failed');
    assert.match(status.message ?? '', /not valid JSON/);
    assert.doesNotMatch(status.message ?? '', /SECRET|hunter2|db_pass/);
  });
});

describe("sources created through the admin API cannot hold up the operator's syncs", () => {
  let registry: TestRegistry;
  let dir: string;
  const held: import('node:http').ServerResponse[] = [];
  const peer = createHttpServer((_req, res) => void held.push(res));

  before(async () => {
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    dir = await tempDir();
    await writeFile(join(dir, 'catalog.json'), JSON.stringify({ data: { servers: [{ name: 'io.acme/one', version: '1.0.0', description: 'one' }] } }));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources: [{name: catalog, file: {path: ./catalog.json}, syncPolicy: {interval: 1h}}]
registries: [{name: main, sources: [catalog]}]
sync: {allowPrivateAddresses: true, maxConcurrent: 2}
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    for (const res of held) res.destroy();
    peer.closeAllConnections();
    await registry?.stop();
    await new Promise<void>((resolve) => peer.close(() => resolve()));
  });

  it('syncs stuck on a peer the caller names leave a slot for the config file\'s sources, which go first', async () => {
    const url = `http://127.0.0.1:${(peer.address() as { port: number }).port}`;
    for (let i = 0; i < 3; i++) {
      const put = await registry.request('PUT', `/v1/sources/stuck-${i}`, { body: { api: { url }, syncPolicy: { interval: '1h' } } });
      assert.equal(put.status, 201, put.text);
    }
    const deadline = Date.now() + 5_000;
    while (held.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(held.length > 0, 'the stuck syncs started');
    await writeFile(join(dir, 'catalog.json'), JSON.stringify({ data: { servers: ['one', 'two'].map((n) => ({ name: `io.acme/${n}`, version: '1.0.0', description: n })) } }));
    const started = Date.now();
    const synced = await registry.request('POST', '/v1/sources/catalog/sync');
    const status = synced.json<{ status: Status }>().status;
    assert.deepEqual([status.phase, status.servers], ['ok', 2]);
    assert.ok(Date.now() - started < 3_000, `the operator's sync waited ${Date.now() - started} ms behind the caller's`);
  });
});

describe('a hostile peer or file cannot make a sync hold the heap of the process', () => {
  let registry: TestRegistry;
  let dir: string;
  let peer: ReturnType<typeof createHttpServer>;
  // 8 MiB of "{}," is 2.8 million empty objects: ~170 MiB of heap once parsed (21 times its
  // size). The api source reads 32 such pages (256 MiB) before it judges an item: ~5.5 GiB, past
  // the heap's limit: the process dies.
  const objects = (bytes: number) => `[${'{},'.repeat(Math.floor(bytes / 3) - 1)}{}]`;
  const page = (n: number) => `{"servers": [{"server": {"name": "io.evil/p${n}", "version": "1.0.0", "description": "x", "x": ${objects(8 * 1024 * 1024 - 200)}}}], "metadata": {"nextCursor": "p${n + 1}", "count": 1}}`;

  before(async () => {
    peer = createHttpServer((req, res) => {
      const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('cursor')?.slice(1) ?? '1');
      res.writeHead(200, { 'content-type': 'application/json' }).end(page(n));
    });
    await new Promise<void>((resolve) => peer.listen(0, '127.0.0.1', resolve));
    dir = await tempDir();
    await mkdir(join(dir, 'catalogs'));
    registry = await startTestRegistry(
      `auth: {mode: anonymous}
sources: [{name: internal, managed: {}}]
registries: [{name: main, sources: [internal]}]
sync: {allowPrivateAddresses: true, fileRoot: ./catalogs}
database: {type: memory}
`,
      dir,
    );
  });
  after(async () => {
    await registry?.stop();
    peer.closeAllConnections();
    await new Promise<void>((resolve) => peer.close(() => resolve()));
  });

  it('an api read is refused past a bound on its JSON values, before they are parsed', { timeout: 120_000 }, async () => {
    const url = `http://127.0.0.1:${(peer.address() as { port: number }).port}`;
    assert.equal((await registry.request('PUT', '/v1/sources/bomb', { body: { api: { url }, syncPolicy: { interval: '1h' } } })).status, 201);
    const status = (await registry.request('POST', '/v1/sources/bomb/sync')).json<{ status: Status }>().status;
    assert.equal(status.phase, 'failed', JSON.stringify(status));
    assert.match(status.message ?? '', /more than 4000000 JSON values/);
  });

  it('an upstream file is refused past the same bound, before it is parsed', async () => {
    const path = join(dir, 'catalogs', 'bomb.json');
    await writeFile(path, `{"data": {"servers": ${objects(13 * 1024 * 1024)}}}`);
    assert.equal((await registry.request('PUT', '/v1/sources/file-bomb', { body: { file: { path }, syncPolicy: { interval: '1h' } } })).status, 201);
    const status = (await registry.request('POST', '/v1/sources/file-bomb/sync')).json<{ status: Status }>().status;
    assert.equal(status.phase, 'failed', JSON.stringify(status));
    assert.match(status.message ?? '', /more than 4000000 JSON values/);
  });
});
