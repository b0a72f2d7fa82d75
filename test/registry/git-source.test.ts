/**
 * The git source reader against a real git server (git's own http-backend, test/fixtures/
 * git-server.ts): snapshots, unchanged commits that cost only ls-remote, unchanged content,
 * changes, broken commits, missing branches and paths, a private repository, the size, download
 * and time bounds, hostile settings, and the temporary directories all gone at the end.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runGit } from '../../plugins/registry/sync/git-command.ts';
import { gitEnvironment } from '../../plugins/registry/sync/git-environment.ts';
import { createGitReader, type GitProtocol, type GitReaderOptions, type GitReaderSettings } from '../../plugins/registry/sync/git-source.ts';
import { SyncFailure, type ReadContext, type ReadOutcome } from '../../plugins/registry/sync/source-reader.ts';
import type { SyncStatus } from '../../plugins/registry/store/records.ts';
import { startGitServer, type GitServer } from '../fixtures/git-server.ts';

const PATH = 'registry/upstream.json';
const server = (name: string, version: string) => ({ name, version, description: `${name} ${version}` });
const upstream = (...servers: object[]) => JSON.stringify({ version: '1.0.0', data: { servers, skills: [{ namespace: 'io.acme', name: 'notes', version: '1.0.0', description: 'notes' }] } });

/** The status the scheduler would pass after the outcome `outcome` (digest and revision are all the reader looks at). */
function statusAfter(outcome: ReadOutcome | null): SyncStatus | null {
  if (outcome === null) return null;
  return {
    phase: 'ok',
    lastAttemptAt: null,
    lastSuccessAt: null,
    nextAttemptAt: null,
    failedAttempts: 0,
    attempts: 1,
    message: null,
    servers: 0,
    skills: 0,
    skipped: [],
    digest: outcome.type === 'snapshot' ? outcome.digest : null,
    revision: outcome.revision ?? null,
  };
}

const context = (previous: SyncStatus | null = null, signal = new AbortController().signal): ReadContext => ({ signal, previous });

async function failure(promise: Promise<unknown>): Promise<SyncFailure> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof SyncFailure, `expected a SyncFailure, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the read to fail');
}

function failureOf(fn: () => unknown): SyncFailure {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SyncFailure, `expected a SyncFailure, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a SyncFailure');
}

describe('the git source reader', () => {
  let git: GitServer;
  let tempRoot: string;
  let catalog: string;
  const settings = (extra: Partial<GitReaderSettings> = {}): GitReaderSettings => ({ repository: catalog, branch: 'main', path: PATH, credentials: null, ...extra });
  const reader = (extra: Partial<GitReaderSettings> = {}, options: GitReaderOptions = {}) => createGitReader(settings(extra), { tempRoot, ...options });
  /** The protocol-v2 commands the server received while `run` ran. */
  async function commandsDuring<T>(run: () => Promise<T>): Promise<{ value: T; commands: (string | null)[] }> {
    const from = git.requests.length;
    const value = await run();
    return { value, commands: git.requests.slice(from).map((r) => r.command) };
  }

  before(async () => {
    git = await startGitServer();
    tempRoot = await mkdtemp(join(tmpdir(), 'gatehouse-git-reads-'));
    catalog = await git.createRepository('catalog.git');
    await git.commit('catalog.git', 'main', PATH, upstream(server('io.acme/a', '1.0.0'), server('io.acme/b', '2.0.0')));
    await git.commit('catalog.git', 'main', 'other/large.bin', randomBytes(256 * 1024)); // a file a read must not download
  });
  after(async () => {
    await git.close();
    await rm(tempRoot, { recursive: true, force: true });
  });

  it('reads the file at the branch tip: a snapshot whose revision is the commit', async () => {
    const outcome = await reader().read(context());
    assert.equal(outcome.type, 'snapshot');
    assert.ok(outcome.type === 'snapshot');
    assert.equal(outcome.revision, await git.head('catalog.git', 'main'));
    assert.deepEqual(
      outcome.items.map((i) => `${i.kind} ${i.name}@${i.version}`),
      ['server io.acme/a@1.0.0', 'server io.acme/b@2.0.0', 'skill io.acme/notes@1.0.0'],
    );
    assert.deepEqual(outcome.skipped, []);
    assert.match(outcome.digest, /^[\w-]{43}$/);
  });

  it('the same commit again is unchanged and costs only ls-remote (no fetch)', async () => {
    const first = await reader().read(context());
    const { value, commands } = await commandsDuring(() => reader().read(context(statusAfter(first))));
    assert.deepEqual(value, { type: 'unchanged', revision: first.revision });
    assert.deepEqual(commands, [null, 'ls-refs']);
  });

  it('a full read fetches the trees and the one blob, not the other files', async () => {
    const from = git.requests.length;
    await reader().read(context());
    const requests = git.requests.slice(from);
    // ls-remote; the fetch of the commit and its trees; the fetch of the file's blob.
    assert.deepEqual(requests.map((r) => r.command).filter((c) => c !== null), ['ls-refs', 'ls-refs', 'fetch', 'fetch']);
    const received = requests.reduce((sum, r) => sum + r.bytes, 0);
    assert.ok(received < 16 * 1024, `the read received ${received} bytes: the 256 KiB file beside it came along`);
  });

  it('a server without partial-clone filters: the tip comes in one fetch, read the same', async () => {
    const url = await git.createRepository('plain.git', { filters: false });
    await git.commit('plain.git', 'main', PATH, upstream(server('io.acme/p', '1.0.0')));
    const { value, commands } = await commandsDuring(() => reader({ repository: url }).read(context()));
    assert.ok(value.type === 'snapshot');
    assert.deepEqual(value.items.map((i) => i.name), ['io.acme/p', 'io.acme/notes']);
    assert.deepEqual(commands.filter((c) => c !== null), ['ls-refs', 'ls-refs', 'fetch']);
  });

  it('a new commit with the same content is unchanged (same digest), with the new revision', async () => {
    const first = await reader().read(context());
    const commit = await git.commit('catalog.git', 'main', 'README.md', 'unrelated change');
    const { value, commands } = await commandsDuring(() => reader().read(context(statusAfter(first))));
    assert.deepEqual(value, { type: 'unchanged', revision: commit });
    assert.ok(commands.includes('fetch'));
  });

  it('a new commit with changed content is a new snapshot', async () => {
    const first = await reader().read(context());
    const commit = await git.commit('catalog.git', 'main', PATH, upstream(server('io.acme/a', '1.0.0'), server('io.acme/c', '3.0.0')));
    const outcome = await reader().read(context(statusAfter(first)));
    assert.ok(outcome.type === 'snapshot');
    assert.equal(outcome.revision, commit);
    assert.ok(outcome.items.some((i) => i.name === 'io.acme/c'));
    assert.notEqual(outcome.digest, (first as { digest: string }).digest);
  });

  it('a broken commit (invalid JSON) fails naming the file, the commit and the problem', async () => {
    const good = await reader().read(context());
    const commit = await git.commit('catalog.git', 'broken', PATH, '{"data": {"servers": [');
    const err = await failure(reader({ branch: 'broken' }).read(context(statusAfter(good))));
    assert.match(err.message, new RegExp(`^registry/upstream\\.json at commit ${commit.slice(0, 12)}: the file is not valid JSON`));
  });

  it('a file that is JSON but not the upstream format fails saying so', async () => {
    await git.commit('catalog.git', 'not-upstream', PATH, '{"servers": []}');
    const err = await failure(reader({ branch: 'not-upstream' }).read(context()));
    assert.match(err.message, /not in the upstream format/);
  });

  it('a missing branch fails naming it', async () => {
    const err = await failure(reader({ branch: 'release/9' }).read(context()));
    assert.equal(err.message, `branch "release/9" not found in ${catalog}`);
  });

  it('a missing path fails naming the path and the commit', async () => {
    const head = await git.head('catalog.git', 'main');
    const err = await failure(reader({ path: 'registry/nope.json' }).read(context()));
    assert.equal(err.message, `registry/nope.json not found at commit ${head.slice(0, 12)} of ${catalog}`);
    const dir = await failure(reader({ path: 'registry' }).read(context()));
    assert.match(dir.message, /^registry at commit \w+ is a directory, not a file$/);
  });

  it('branch null follows the remote default branch (HEAD)', async () => {
    const url = await git.createRepository('trunk.git', { defaultBranch: 'trunk' });
    const commit = await git.commit('trunk.git', 'trunk', PATH, upstream(server('io.acme/t', '1.0.0')));
    const outcome = await reader({ repository: url, branch: null }).read(context());
    assert.ok(outcome.type === 'snapshot');
    assert.equal(outcome.revision, commit);
    const unchanged = await commandsDuring(() => reader({ repository: url, branch: null }).read(context(statusAfter(outcome))));
    assert.deepEqual(unchanged.value, { type: 'unchanged', revision: commit });
    assert.deepEqual(unchanged.commands, [null, 'ls-refs']);
  });

  it('an empty repository and a missing repository fail clearly', async () => {
    const empty = await git.createRepository('empty.git');
    assert.match((await failure(reader({ repository: empty, branch: null }).read(context()))).message, /has no default branch \(HEAD\): is it empty\?/);
    assert.match((await failure(reader({ repository: `${git.url}/absent.git` }).read(context()))).message, /^repository http:\/\/127\.0\.0\.1:\d+\/absent\.git not found/);
  });

  it('an unreachable repository fails saying so', async () => {
    const err = await failure(reader({ repository: 'http://127.0.0.1:1/closed.git' }).read(context()));
    assert.match(err.message, /^repository http:\/\/127\.0\.0\.1:1\/closed\.git is unreachable \(/);
  });

  describe('a private repository', () => {
    const password = 'pa55-W0rd-never-shown';
    let url: string;
    const messages: string[] = [];
    before(async () => {
      url = await git.createRepository('private.git', { credentials: { username: 'reader', password } });
      await git.commit('private.git', 'main', PATH, upstream(server('io.acme/secret', '1.0.0')));
    });
    after(() => {
      for (const message of messages) {
        assert.ok(!message.includes(password), `a message shows the password: ${message}`);
        assert.ok(!message.includes(Buffer.from(`reader:${password}`).toString('base64')), `a message shows the Basic value: ${message}`);
      }
    });

    it('without credentials: authentication required', async () => {
      const err = await failure(reader({ repository: url }).read(context()));
      messages.push(err.message);
      assert.equal(err.message, `authentication required by ${url}: it is private, give credentials in the source's auth`);
    });

    it('with wrong credentials: authentication refused, the password not shown', async () => {
      const err = await failure(reader({ repository: url, credentials: { username: 'reader', password: `${password}-wrong` } }).read(context()));
      messages.push(err.message);
      assert.equal(err.message, `authentication refused by ${url}: the credentials in the source's auth were not accepted`);
    });

    it('with the right credentials: read, and they appear in no git argument', async () => {
      // A git that logs its arguments and the names of its environment variables, then runs git.
      const bin = await mkdtemp(join(tmpdir(), 'gatehouse-git-spy-'));
      try {
        const spy = join(bin, 'git');
        await writeFile(spy, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${bin}/args'\nenv | cut -d= -f1 >> '${bin}/env'\nexec git "$@"\n`);
        await chmod(spy, 0o755);
        const outcome = await reader({ repository: url, credentials: { username: 'reader', password } }, { gitBinary: spy }).read(context());
        assert.ok(outcome.type === 'snapshot');
        assert.deepEqual(outcome.items.map((i) => i.name), ['io.acme/secret', 'io.acme/notes']);
        const args = await readFile(join(bin, 'args'), 'utf8');
        assert.ok(args.includes('ls-remote') && args.includes('fetch'));
        assert.ok(!args.includes(password) && !args.includes(Buffer.from(`reader:${password}`).toString('base64')), 'credentials in git arguments');
        const names = new Set((await readFile(join(bin, 'env'), 'utf8')).split('\n').filter(Boolean));
        const expected = /^(PATH|HOME|XDG_CONFIG_HOME|LC_ALL|LANG|PWD|SHLVL|_|GIT_\w+|SSL_CERT_\w+|CURL_CA_BUNDLE|SSH_AUTH_SOCK|[a-zA-Z_]*_proxy|[A-Z_]*_PROXY)$/;
        for (const name of names) assert.match(name, expected, `git saw ${name} from this process's environment`);
        assert.ok(!names.has('NODE_OPTIONS') && !names.has('USER'));
      } finally {
        await rm(bin, { recursive: true, force: true });
      }
    });

    it('a repository URL that carries credentials is refused without echoing them', () => {
      const withPassword = failureOf(() => reader({ repository: url.replace('http://', `http://reader:${password}@`) }));
      messages.push(withPassword.message);
      assert.match(withPassword.message, /^git source: the repository address carries credentials: give them in the source's auth instead/);
      const withToken = failureOf(() => reader({ repository: `https://${password}@git.example.com/acme/catalog.git` }));
      messages.push(withToken.message);
      assert.match(withToken.message, /carries credentials/);
      const scpLike = failureOf(() => reader({ repository: `reader:${password}@git.example.com:acme/catalog.git` }));
      messages.push(scpLike.message);
      assert.match(scpLike.message, /carries credentials/);
    });

    it('credentials are refused over plain http to another host, and for ssh', () => {
      const credentials = { username: 'reader', password };
      assert.match(failureOf(() => reader({ repository: 'http://git.example.com/catalog.git', credentials })).message, /clear text: use an https repository address/);
      assert.match(failureOf(() => reader({ repository: 'git@git.example.com:acme/catalog.git', credentials })).message, /http\(s\) repositories only/);
    });
  });

  it('a file over the size bound fails with its size and the bound', async () => {
    const head = await git.commit('catalog.git', 'big', PATH, upstream(...Array.from({ length: 200 }, (_, i) => server(`io.acme/s${i}`, '1.0.0'))));
    const err = await failure(reader({ branch: 'big' }, { maxFileBytes: 4096 }).read(context()));
    assert.match(err.message, new RegExp(`^registry/upstream\\.json at commit ${head.slice(0, 12)} is too large: \\d+ bytes, more than the 4096-byte bound$`));
  });

  it('a download over its bound is stopped', async () => {
    await git.commit('catalog.git', 'huge', PATH, randomBytes(2 * 1024 * 1024));
    const err = await failure(reader({ branch: 'huge' }, { maxDownloadBytes: 256 * 1024 }).read(context()));
    assert.match(err.message, /was stopped: the download passed the 262144-byte bound \(\d+ bytes written\)$/);
  });

  it('a server that stalls: git is killed at the time bound and its directory removed', async () => {
    const url = await git.createRepository('stalled.git');
    git.stall('stalled.git');
    const started = Date.now();
    const err = await failure(reader({ repository: url }, { timeoutMs: 1000 }).read(context()));
    const took = Date.now() - started;
    assert.equal(err.message, `reading ${url} timed out after 1 s (git was stopped)`);
    assert.ok(took >= 1000 && took < 5000, `took ${took} ms`);
    assert.deepEqual(await readdir(tempRoot), []);
  });

  it('an abort from the scheduler, and close(), stop a read under way', async () => {
    const url = `${git.url}/stalled.git`;
    const abort = new AbortController();
    const reading = reader({ repository: url }).read(context(null, abort.signal));
    setTimeout(() => abort.abort(), 200);
    assert.equal((await failure(reading)).message, `reading ${url} was stopped before it completed`);
    const closing = reader({ repository: url });
    const read = closing.read(context());
    await new Promise((resolve) => setTimeout(resolve, 200));
    await closing.close?.();
    assert.equal((await failure(read)).message, `reading ${url} was stopped: the source is being closed`);
    assert.deepEqual(await readdir(tempRoot), []);
  });

  it('hostile settings are refused before git runs, and nothing is executed', async () => {
    const marker = join(tempRoot, '..', `gatehouse-git-pwned-${process.pid}`);
    const hostile: [Partial<GitReaderSettings>, RegExp][] = [
      [{ branch: `--upload-pack=touch ${marker}` }, /^git source: branch "--upload-pack=touch .*" must not start with "-"$/],
      [{ branch: 'main/../../etc' }, /must not contain "\.\."/],
      [{ branch: 'a\nb' }, /control characters/],
      [{ repository: `--upload-pack=touch ${marker}` }, /must not start with "-"/],
      [{ repository: `ext::sh -c touch% ${marker}` }, /remote helper/],
      [{ repository: 'fd::3' }, /remote helper/],
      [{ repository: 'ssh://-oProxyCommand=x/repo.git' }, /starting with "-"/],
      [{ repository: 'ssh://-oProxyCommand@git.example.com/repo.git' }, /starting with "-"/],
      [{ repository: 'relative/repo.git' }, /must be absolute/],
      [{ repository: 'https://git.example.com/r.git?token=x' }, /query or a fragment/],
      [{ repository: 'ftp://git.example.com/r.git' }, /not one of https, http, ssh, git, file/],
      [{ path: '../outside.json' }, /must not have "\." or "\.\." components/],
      [{ path: '-p' }, /must not start with "-"/],
      [{ path: '/etc/passwd' }, /relative to the repository's root/],
      [{ path: 'a\u0000b' }, /control characters/],
    ];
    for (const [extra, message] of hostile) assert.match(failureOf(() => reader(extra)).message, message, JSON.stringify(extra));
    assert.match((await failure(reader({}, { tempRoot: join(tempRoot, 'absent') }).read(context()))).message, /^no temporary directory can be made under /);
    await assert.rejects(stat(marker), { code: 'ENOENT' });
  });

  it('the allowed transports are enforced, by the reader and by git', async () => {
    assert.match(failureOf(() => reader({}, { protocols: ['https'] })).message, /uses http, which is not allowed here \(allowed: https\)/);
    assert.match(failureOf(() => reader({ repository: '/srv/git/catalog.git' }, { protocols: ['https', 'ssh'] })).message, /uses file, which is not allowed/);
    // A local path is file transport: allowed by default, and read like any other.
    const outcome = await reader({ repository: join(git.root, 'catalog.git') }).read(context());
    assert.equal(outcome.type, 'snapshot');
    // Behind the reader's own check, git itself holds to the same list (and never allows ext).
    const home = await mkdtemp(join(tempRoot, 'home-'));
    try {
      const { env, configArgs } = gitEnvironment({ home, protocols: ['https', 'ext' as GitProtocol], credentials: null });
      const marker = join(home, 'pwned');
      for (const address of [join(git.root, 'catalog.git'), `file://${join(git.root, 'catalog.git')}`, catalog, `ext::sh -c touch% ${marker}`]) {
        const result = await runGit('git', { args: [...configArgs, 'ls-remote', '--', address], env, cwd: home, signal: AbortSignal.timeout(10_000), maxStdoutBytes: 65536 });
        assert.notEqual(result.code, 0, address);
        assert.match(result.stderr, /transport '(file|http|ext)' not allowed/, address);
      }
      await assert.rejects(stat(marker), { code: 'ENOENT' });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  describe('held to public addresses (allowPrivateAddresses: false)', () => {
    it('refuses loopback and private hosts, by address and by name, before git runs', async () => {
      const from = git.requests.length;
      const byAddress = await failure(reader({}, { allowPrivateAddresses: false }).read(context()));
      assert.match(byAddress.message, /^refusing to fetch from 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address \(sources created through the admin API/);
      const byName = await failure(reader({ repository: catalog.replace('127.0.0.1', 'localhost') }, { allowPrivateAddresses: false }).read(context()));
      assert.match(byName.message, /^refusing to fetch from localhost: /);
      const privateNet = await failure(reader({ repository: 'https://10.1.2.3/catalog.git' }, { allowPrivateAddresses: false }).read(context()));
      assert.match(privateNet.message, /10\.1\.2\.3 is a private or non-public address/);
      const unresolved = await failure(reader({ repository: 'https://git.nonexistent.invalid/catalog.git' }, { allowPrivateAddresses: false }).read(context()));
      assert.match(unresolved.message, /^the repository's host git\.nonexistent\.invalid cannot be resolved \(/);
      assert.equal(git.requests.length, from);
    });

    it('only http(s), which can be pinned, is allowed', () => {
      const ssh = failureOf(() => reader({ repository: 'git@git.example.com:acme/catalog.git' }, { allowPrivateAddresses: false }));
      assert.match(ssh.message, /uses ssh, which is not allowed here \(allowed: https, http\)/);
    });

    it('git connects to the pinned address only, whatever the name resolves to', async () => {
      // The name resolves nowhere: only the pin makes git reach the server.
      const port = new URL(catalog).port;
      const pinnedUrl = `http://git.pinned.invalid:${port}/catalog.git`;
      const home = await mkdtemp(join(tempRoot, 'home-'));
      try {
        const ask = async (pinnedAddresses: string | null) => {
          const { env, configArgs } = gitEnvironment({ home, protocols: ['http'], credentials: null, pinnedAddresses });
          return runGit('git', { args: [...configArgs, 'ls-remote', '--', pinnedUrl, 'HEAD'], env, cwd: home, signal: AbortSignal.timeout(10_000), maxStdoutBytes: 65536 });
        };
        const pinned = await ask(`git.pinned.invalid:${port}:127.0.0.1`);
        assert.equal(pinned.code, 0, pinned.stderr);
        assert.match(pinned.stdout.toString(), /^[0-9a-f]{40}\tHEAD$/m);
        const unpinned = await ask(null);
        assert.match(unpinned.stderr, /Could not resolve host: git\.pinned\.invalid/);
      } finally {
        await rm(home, { recursive: true, force: true });
      }
    });
  });

  it('a git that cannot be run is a failure saying so', async () => {
    const err = await failure(reader({}, { gitBinary: '/nonexistent/git' }).read(context()));
    assert.match(err.message, /^git could not be run \(\/nonexistent\/git\): spawn \/nonexistent\/git ENOENT$/);
  });

  it('leaves no temporary directory behind', async () => {
    assert.deepEqual(await readdir(tempRoot), []);
  });
});
