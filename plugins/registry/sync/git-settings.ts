/**
 * What a git source names, checked before git ever sees it: the repository address (which
 * transport git will use for it, and no credentials inside it), the branch and the file path.
 * Every value ends up as an argument of a git command, so anything git could read as an option
 * (a leading `-`), a remote helper (`ext::sh -c ...`), a pathspec trick or a path out of the
 * repository (`..`) is refused here with a message naming the field and the problem.
 */
import { isLoopbackHost } from '@gatehouse-mcp/gateway';

/** Transports a git source may use. `ext` (runs a command) and other remote helpers never are. */
export type GitProtocol = 'https' | 'http' | 'ssh' | 'git' | 'file';
export const GIT_PROTOCOLS: readonly GitProtocol[] = ['https', 'http', 'ssh', 'git', 'file'];

export interface GitCredentials {
  readonly username: string;
  readonly password: string;
}

export interface GitReaderSettings {
  /** https://, http://, ssh://, git://, file:// URL, scp-like `user@host:path`, or an absolute local path. */
  readonly repository: string;
  /** null: the remote's default branch (what its HEAD points at). */
  readonly branch: string | null;
  /** The file, relative to the repository's root (`registry/servers.json`). */
  readonly path: string;
  /** HTTP Basic credentials for a private http(s) repository. */
  readonly credentials: GitCredentials | null;
}

export interface RepositoryAddress {
  readonly protocol: GitProtocol;
  /** Host name for network transports (brackets removed from IPv6), null for local paths. */
  readonly host: string | null;
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_ADDRESS = 2048;
const MAX_PATH = 4096;
const MAX_BRANCH = 255;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const SCHEME_ALIASES: Readonly<Record<string, GitProtocol>> = { https: 'https', http: 'http', ssh: 'ssh', 'git+ssh': 'ssh', 'ssh+git': 'ssh', git: 'git', file: 'file' };

const CREDENTIALS_IN_URL = 'carries credentials: give them in the source\'s auth instead (they would otherwise be stored and shown with the address)';

/** Which transport git uses for `repository`, or why it is refused. */
export function repositoryAddress(repository: string): RepositoryAddress | { problem: string } {
  if (repository.length === 0) return { problem: 'the repository address is empty' };
  if (repository.length > MAX_ADDRESS) return { problem: `the repository address is longer than ${MAX_ADDRESS} characters` };
  if (CONTROL.test(repository)) return { problem: 'the repository address contains control characters' };
  if (repository.startsWith('-')) return { problem: 'the repository address must not start with "-"' };
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(repository)) return { problem: 'the repository address names a git remote helper (<transport>::<address>), which is not allowed' };

  const scheme = SCHEME.exec(repository);
  if (scheme !== null) {
    const protocol = SCHEME_ALIASES[scheme[1]!.toLowerCase()];
    if (protocol === undefined) return { problem: `the repository address uses "${scheme[1]}", not one of ${GIT_PROTOCOLS.join(', ')}` };
    let url: URL;
    try {
      url = new URL(repository);
    } catch {
      return { problem: 'the repository address is not a valid URL' };
    }
    if (url.password !== '' || (url.username !== '' && protocol !== 'ssh')) return { problem: `the repository address ${CREDENTIALS_IN_URL}` };
    if (url.search !== '' || url.hash !== '') return { problem: 'the repository address must not have a query or a fragment' };
    if (protocol === 'file') return url.hostname === '' || url.hostname === 'localhost' ? { protocol, host: null } : { problem: 'a file:// repository address must not name a host' };
    if (url.hostname === '') return { problem: 'the repository address names no host' };
    // ssh would read a host or user starting with "-" as an option (git refuses them too).
    if (url.hostname.startsWith('-') || decodeURIComponent(url.username).startsWith('-')) return { problem: 'the repository address has a host or user starting with "-"' };
    return { protocol, host: url.hostname.replace(/^\[(.*)\]$/, '$1') };
  }
  // git reads `host:path` (a colon before any slash) as ssh, anything else as a local path.
  const colon = repository.indexOf(':');
  const slash = repository.indexOf('/');
  if (colon > 0 && (slash === -1 || colon < slash)) {
    if (/^[^@/]*:[^/]*@/.test(repository)) return { problem: `the repository address ${CREDENTIALS_IN_URL}` };
    const host = repository.slice(repository.lastIndexOf('@', colon) + 1, colon).replace(/^\[(.*)\]$/, '$1');
    if (host === '') return { problem: 'the repository address names no host' };
    if (host.startsWith('-')) return { problem: 'the repository address has a host starting with "-"' };
    return { protocol: 'ssh', host };
  }
  if (!repository.startsWith('/')) return { problem: 'a local repository path must be absolute' };
  return { protocol: 'file', host: null };
}

/** Why `branch` is not a branch name git accepts (the rules of `git check-ref-format`), or null. */
export function branchProblem(branch: string): string | null {
  const named = `branch ${JSON.stringify(branch)}`;
  if (branch.length === 0) return 'the branch is empty';
  if (branch.length > MAX_BRANCH) return `the branch is longer than ${MAX_BRANCH} characters`;
  if (CONTROL.test(branch)) return 'the branch contains control characters';
  if (branch.startsWith('-')) return `${named} must not start with "-"`;
  if (/[ ~^:?*[\\]/.test(branch)) return `${named} contains a character git does not allow in branch names (space ~ ^ : ? * [ \\)`;
  if (branch.includes('..')) return `${named} must not contain ".."`;
  if (branch.includes('@{') || branch === '@') return `${named} must not contain "@{" or be "@"`;
  if (branch.endsWith('.')) return `${named} must not end with "."`;
  for (const part of branch.split('/')) {
    if (part === '') return `${named} must not have empty components (leading, trailing or double "/")`;
    if (part.startsWith('.')) return `${named} has a component starting with "."`;
    if (part.endsWith('.lock')) return `${named} has a component ending with ".lock"`;
  }
  return null;
}

/** Why `path` is not a plain file path inside a repository, or null. */
export function filePathProblem(path: string): string | null {
  const named = `path ${JSON.stringify(path)}`;
  if (path.length === 0) return 'the path is empty';
  if (path.length > MAX_PATH) return `the path is longer than ${MAX_PATH} characters`;
  if (CONTROL.test(path)) return 'the path contains control characters';
  if (path.startsWith('-')) return `${named} must not start with "-"`;
  if (path.startsWith('/')) return `${named} must be relative to the repository's root (no leading "/")`;
  if (path.includes('\\')) return `${named} contains "\\": separate directories with "/"`;
  for (const part of path.split('/')) {
    if (part === '') return `${named} has an empty component (trailing or double "/")`;
    if (part === '.' || part === '..') return `${named} must not have "." or ".." components`;
  }
  return null;
}

function credentialsProblem(credentials: GitCredentials, address: RepositoryAddress): string | null {
  if (address.protocol !== 'https' && address.protocol !== 'http') return 'auth (username and password) is used with http(s) repositories only';
  if (address.protocol === 'http' && (address.host === null || !isLoopbackHost(address.host))) return 'auth over plain http would send the password in clear text: use an https repository address';
  const { username, password } = credentials;
  if (username.length === 0 || password.length === 0) return 'auth needs both a username and a password';
  if (username.length > MAX_PATH || password.length > MAX_PATH) return `auth username and password must be at most ${MAX_PATH} characters`;
  if (username.includes(':')) return 'the auth username must not contain ":" (HTTP Basic cannot carry it)';
  if (CONTROL.test(username) || CONTROL.test(password)) return 'the auth username and password must not contain control characters';
  return null;
}

/**
 * Why these settings cannot be read under `allowed` protocols, or null. Messages name the
 * problem and never repeat a password.
 */
export function gitSettingsProblem(settings: GitReaderSettings, allowed: readonly GitProtocol[] = GIT_PROTOCOLS): string | null {
  const address = repositoryAddress(settings.repository);
  if ('problem' in address) return address.problem;
  if (!allowed.includes(address.protocol)) return `the repository address uses ${address.protocol}, which is not allowed here (allowed: ${allowed.join(', ') || 'none'})`;
  if (settings.branch !== null) {
    const problem = branchProblem(settings.branch);
    if (problem !== null) return problem;
  }
  const pathProblem = filePathProblem(settings.path);
  if (pathProblem !== null) return pathProblem;
  return settings.credentials === null ? null : credentialsProblem(settings.credentials, address);
}
