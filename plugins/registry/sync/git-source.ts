/**
 * The git source reader: one file in the upstream format (upstream-file.ts) at a path on a branch
 * of a git repository. A read costs one `git ls-remote` when the branch has not moved since the
 * last good sync; otherwise it fetches that one commit into a temporary bare repository (no work
 * tree, `--depth 1`, `--filter=blob:none` so only the trees and then the one file's blob come
 * over), reads the blob bounded in size, and deletes the repository.
 *
 * Why the git binary rather than a JavaScript git (isomorphic-git): it speaks every transport a
 * repository may be on (https, http, ssh with the server's keys and agent, git://, local paths)
 * and protocol v2 with partial-clone filters, so a read downloads one commit's trees and one
 * blob rather than every file at the tip; the objects stream to disk in a separate process
 * instead of through this process's memory; and a stuck or hostile transfer is ended by killing
 * a process group, which no in-process library allows. Measured on loopback (git's http-backend,
 * a 3.5 MiB file of 10,000 servers, median of 5, on a shared machine): alone in its repository,
 * isomorphic-git 1.44 fetched and read it in 114 ms, the binary in 206 ms (seven process starts of
 * ~5 ms each); with 200 files of 64 KiB beside it, isomorphic-git took 1,087 ms and grew this
 * process by 89 MiB, the binary 157 ms and 18 MiB (the same work: the other blobs never come).
 * Per read (bench/plugins/registry/sync/git-source.bench.ts, two runs): an unchanged commit
 * (ls-remote only) 27–55 ms, a moved commit with the same file 204–384 ms, a full read with
 * the parse of the 10,000 servers 359–376 ms.
 *
 * What a read refuses (as SyncFailure, for the operator): settings git could misread (checked when
 * the reader is made, git-settings.ts), a path that is a directory, symlink or submodule, a file
 * over `maxFileBytes`, a download over `maxDownloadBytes`, a read over `timeoutMs`, content that
 * is not UTF-8 or not the upstream format. Every git command runs in the environment of
 * git-environment.ts (no host config, helpers or prompts; credentials only in environment
 * variables) and is killed with its helpers when the read is aborted; the temporary directory is
 * removed in every case.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitUnavailable, runGit, type GitResult } from './git-command.ts';
import { directoryBytes, watchDirectorySize } from './git-download-bound.ts';
import { pinPublicAddresses } from './git-address-pin.ts';
import { gitEnvironment, type GitEnvironment } from './git-environment.ts';
import { gitSaid, remoteFailure, type FailureContext } from './git-failure.ts';
import { branchProblem, gitSettingsProblem, GIT_PROTOCOLS, type GitProtocol, type GitReaderSettings } from './git-settings.ts';
import { SyncFailure, type ReadContext, type ReadOutcome, type SourceReader } from './source-reader.ts';
import { contentDigest, parseUpstreamFile } from './upstream-file.ts';

export type { GitCredentials, GitProtocol, GitReaderSettings } from './git-settings.ts';
export { gitSettingsProblem } from './git-settings.ts';

export interface GitReaderOptions {
  /** Time bound of one read, every git command included. Default 60 s. */
  readonly timeoutMs?: number;
  /** Largest file accepted. Default 32 MiB. */
  readonly maxFileBytes?: number;
  /** Largest temporary repository a read may write (trees and the file's blob). Default 128 MiB. */
  readonly maxDownloadBytes?: number;
  /** Transports allowed. Default https, http, ssh, git, file; `ext` never is. */
  readonly protocols?: readonly GitProtocol[];
  /** Where temporary repositories are made. Default the OS temporary directory. */
  readonly tempRoot?: string;
  /** The git executable. Default `git` on PATH. */
  readonly gitBinary?: string;
  /**
   * Whether the repository's host may be a private, loopback or other non-public address.
   * Default true (the operator's own sources). False: http(s) only, the host resolved here and
   * git pinned to its public addresses (git-address-pin.ts), redirects not followed.
   */
  readonly allowPrivateAddresses?: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024;
const DEFAULT_MAX_DOWNLOAD_BYTES = 128 * 1024 * 1024;
/** Output of the commands other than the blob read: refs, tree entries, ids. */
const MAX_LISTING_BYTES = 1024 * 1024;
const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const FETCHED_REF = 'refs/gatehouse/fetched';

type GitRun = (args: readonly string[]) => Promise<GitResult>;

interface GitCommands {
  /** Any git command: the caller reads its exit code. */
  readonly git: (args: readonly string[], maxStdoutBytes?: number) => Promise<GitResult>;
  /** A command that talks to the remote and must succeed: its failure says why (auth, reachability...). */
  readonly remote: GitRun;
  /** A command on the temporary repository that must succeed. */
  readonly local: GitRun;
}

/** Why a read was cut short by this reader's own bounds (the abort reasons it gives). */
class ReadBound extends Error {
  override readonly name = 'ReadBound';
}

interface RemoteHead {
  readonly commit: string;
  /** The ref to fetch: `refs/heads/<branch>`, or `HEAD` when the default branch's name is unknown. */
  readonly ref: string;
}

const short = (commit: string): string => commit.slice(0, 12);

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`git reader option ${name} must be a positive number`);
  return value;
}

/** Reads a git source's file; throws SyncFailure (settings problems included) when it cannot. */
export function createGitReader(settings: GitReaderSettings, options: GitReaderOptions = {}): SourceReader {
  const timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
  const maxFileBytes = positive(options.maxFileBytes, DEFAULT_MAX_FILE_BYTES, 'maxFileBytes');
  const maxDownloadBytes = positive(options.maxDownloadBytes, DEFAULT_MAX_DOWNLOAD_BYTES, 'maxDownloadBytes');
  const protocols = (options.protocols ?? GIT_PROTOCOLS).filter((p) => GIT_PROTOCOLS.includes(p));
  const tempRoot = options.tempRoot ?? tmpdir();
  const gitBinary = options.gitBinary ?? 'git';
  const allowPrivateAddresses = options.allowPrivateAddresses ?? true;
  // Only curl (http, https) can be pinned to checked addresses.
  const problem = gitSettingsProblem(settings, allowPrivateAddresses ? protocols : protocols.filter((p) => p === 'https' || p === 'http'));
  if (problem !== null) throw new SyncFailure(`git source: ${problem}`);

  const { repository, branch, path } = settings;
  const downloadTooLarge = (bytes: number): string => `reading ${repository} was stopped: the download passed the ${maxDownloadBytes}-byte bound (${bytes} bytes written)`;
  /** Reads under way, so that close() can stop them and wait for their cleanup. */
  const running = new Map<AbortController, Promise<unknown>>();

  async function read(context: ReadContext, stop: AbortSignal): Promise<ReadOutcome> {
    const deadline = AbortSignal.timeout(timeoutMs);
    const download = new AbortController();
    const signal = AbortSignal.any([context.signal, stop, deadline, download.signal]);
    let work: string;
    try {
      work = await mkdtemp(join(tempRoot, 'gatehouse-git-'));
    } catch (err) {
      throw new SyncFailure(`no temporary directory can be made under ${tempRoot}: ${(err as Error).message}`);
    }
    const home = join(work, 'home');
    const bare = join(work, 'repository.git');
    let stopWatching = (): void => {};

    try {
      await mkdir(home);
      const pinnedAddresses = allowPrivateAddresses ? null : await pinPublicAddresses(repository, signal);
      const environment = gitEnvironment({ home, protocols, credentials: settings.credentials, pinnedAddresses });
      const commands = gitCommands(environment, work, signal);
      const { remote, local } = commands;
      const head = await lsRemote(remote);
      if (context.previous?.revision === head.commit) return { type: 'unchanged', revision: head.commit };

      await local(['init', '--quiet', '--bare', '--', bare]);
      await local(['-C', bare, 'remote', 'add', '--no-tags', '--', 'origin', repository]);
      stopWatching = watchDirectorySize(bare, maxDownloadBytes, (bytes) =>
        download.abort(new ReadBound(downloadTooLarge(bytes))),
      );
      await remote(['-C', bare, 'fetch', '--quiet', '--depth=1', '--filter=blob:none', '--no-tags', '--no-write-fetch-head', '--', 'origin', `+${head.ref}:${FETCHED_REF}`]);
      const commit = (await local(['-C', bare, 'rev-parse', '--verify', `${FETCHED_REF}^{commit}`])).stdout.toString('latin1').trim();
      if (!OBJECT_ID.test(commit)) throw new SyncFailure(`the fetch of ${repository} gave no commit`);
      // The branch may have moved between ls-remote and fetch: the fetched commit is the one read.
      if (context.previous?.revision === commit) return { type: 'unchanged', revision: commit };

      const content = await readFile(bare, commit, commands);
      stopWatching();
      const digest = contentDigest(content);
      if (context.previous?.digest === digest) return { type: 'unchanged', revision: commit };
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(content);
      } catch {
        throw new SyncFailure(`${path} at commit ${short(commit)}: the file is not valid UTF-8`);
      }
      const parsed = parseUpstreamFile(text);
      if (!parsed.ok) throw new SyncFailure(`${path} at commit ${short(commit)}: ${parsed.message}`);
      return { type: 'snapshot', items: parsed.items, skipped: parsed.skipped, digest, revision: commit };
    } catch (err) {
      if (err instanceof SyncFailure) throw err;
      if (err instanceof GitUnavailable) throw new SyncFailure(err.message);
      if (stop.aborted) throw new SyncFailure(`reading ${repository} was stopped: the source is being closed`);
      if (download.signal.aborted) throw new SyncFailure((download.signal.reason as Error).message);
      if (deadline.aborted) throw new SyncFailure(`reading ${repository} timed out after ${seconds(timeoutMs)} (git was stopped)`);
      if (context.signal.aborted) throw new SyncFailure(`reading ${repository} was stopped before it completed`);
      throw err;
    } finally {
      stopWatching();
      await rm(work, { recursive: true, force: true, maxRetries: 3 });
    }
  }

  /** The ways a read runs git: plain, about the remote (its failures explained), on the local copy. */
  function gitCommands(environment: GitEnvironment, work: string, signal: AbortSignal): GitCommands {
    const { env, configArgs, secrets } = environment;
    const failure: FailureContext = { repository, credentialsGiven: settings.credentials !== null, secrets };
    const git = (args: readonly string[], maxStdoutBytes = MAX_LISTING_BYTES): Promise<GitResult> =>
      runGit(gitBinary, { args: [...configArgs, ...args], env, cwd: work, signal, maxStdoutBytes });
    return {
      git,
      async remote(args) {
        const result = await git(args);
        if (result.stdoutOverflow) throw new SyncFailure(`${repository} answered with more than ${MAX_LISTING_BYTES} bytes where a short listing was expected`);
        if (result.code !== 0) throw new SyncFailure(remoteFailure(result.stderr, failure));
        return result;
      },
      async local(args) {
        const result = await git(args);
        if (result.code !== 0) throw new SyncFailure(`git failed on the local copy of ${repository}: ${gitSaid(result.stderr, secrets)}`);
        return result;
      },
    };
  }

  /** The commit the branch (or the default branch) points at on the remote. */
  async function lsRemote(remote: GitRun): Promise<RemoteHead> {
    const wanted = branch === null ? 'HEAD' : `refs/heads/${branch}`;
    const result = await remote(['ls-remote', ...(branch === null ? ['--symref'] : []), '--', repository, wanted]);
    let commit: string | null = null;
    let target: string | null = null;
    for (const line of result.stdout.toString('utf8').split('\n')) {
      const [left, name] = line.split('\t');
      if (name !== wanted || left === undefined) continue;
      if (left.startsWith('ref: ')) target = left.slice(5);
      else if (OBJECT_ID.test(left)) commit = left;
    }
    if (commit === null) {
      throw new SyncFailure(branch === null ? `${repository} has no default branch (HEAD): is it empty?` : `branch ${JSON.stringify(branch)} not found in ${repository}`);
    }
    if (branch !== null) return { commit, ref: wanted };
    // The default branch's name comes from the remote: used only when it is a plain branch name.
    const defaultBranch = target?.startsWith('refs/heads/') ? target.slice('refs/heads/'.length) : null;
    return { commit, ref: defaultBranch !== null && branchProblem(defaultBranch) === null ? `refs/heads/${defaultBranch}` : 'HEAD' };
  }

  /** The file's bytes at `commit`: a regular file, at most maxFileBytes (its blob is fetched here). */
  async function readFile(bare: string, commit: string, { git, remote }: GitCommands): Promise<Buffer> {
    const at = `${path} at commit ${short(commit)}`;
    const listing = await git(['-C', bare, 'ls-tree', '-z', '--full-tree', commit, '--', path]);
    if (listing.code !== 0) throw new SyncFailure(`${at} cannot be listed: ${gitSaid(listing.stderr, [])}`);
    // `-z` records: `<mode> <type> <object>\t<path>`, the path unquoted.
    const entry = listing.stdout
      .toString('utf8')
      .split('\0')
      .map((record) => /^(\d{6}) [a-z]+ ([0-9a-f]+)\t(.*)$/s.exec(record))
      .find((match) => match?.[3] === path);
    if (entry === undefined || entry === null) throw new SyncFailure(`${path} not found at commit ${short(commit)} of ${repository}`);
    const mode = entry[1]!;
    const blob = entry[2]!;
    if (mode === '040000') throw new SyncFailure(`${at} is a directory, not a file`);
    if (mode === '120000') throw new SyncFailure(`${at} is a symbolic link, which is not followed: name the file itself`);
    if (mode === '160000') throw new SyncFailure(`${at} is a submodule, not a file`);
    if ((mode !== '100644' && mode !== '100755') || !OBJECT_ID.test(blob)) throw new SyncFailure(`${at} is not a regular file (mode ${mode})`);

    const size = Number.parseInt((await remote(['-C', bare, 'cat-file', '-s', blob])).stdout.toString('latin1').trim(), 10);
    if (!Number.isSafeInteger(size)) throw new SyncFailure(`${at}: git gave no size for the file`);
    // The watch samples while git runs; this settles what the finished fetches wrote.
    const downloaded = await directoryBytes(bare);
    if (downloaded > maxDownloadBytes) throw new SyncFailure(downloadTooLarge(downloaded));
    const tooLarge = (bytes: string): SyncFailure => new SyncFailure(`${at} is too large: ${bytes} bytes, more than the ${maxFileBytes}-byte bound`);
    if (size > maxFileBytes) throw tooLarge(String(size));
    const content = await git(['-C', bare, 'cat-file', 'blob', blob], maxFileBytes);
    if (content.stdoutOverflow) throw tooLarge(`over ${maxFileBytes}`);
    if (content.code !== 0) throw new SyncFailure(`${at} cannot be read: ${gitSaid(content.stderr, [])}`);
    return content.stdout;
  }

  return {
    read(context: ReadContext): Promise<ReadOutcome> {
      const stop = new AbortController();
      const reading = read(context, stop.signal);
      running.set(stop, reading);
      const forget = (): void => void running.delete(stop);
      reading.then(forget, forget);
      return reading;
    },
    async close(): Promise<void> {
      for (const stop of running.keys()) stop.abort(new ReadBound('closed'));
      await Promise.allSettled(running.values());
    },
  };
}
