/**
 * The environment and configuration every git command of a git source runs with. Nothing of the
 * server's own git setup applies: no system or user config (GIT_CONFIG_NOSYSTEM, HOME and
 * XDG_CONFIG_HOME in an empty directory, GIT_CONFIG_GLOBAL=/dev/null), so no credential helper,
 * url.insteadOf rewrite, hook or alias of the host can run or leak; no prompt (a missing password
 * fails at once); hooks off; only the allowed transports (GIT_ALLOW_PROTOCOL and protocol.*.allow
 * agree; `ext`, which runs commands, is never among them).
 *
 * Credentials travel as an `Authorization: Basic` header set through GIT_CONFIG_KEY_n/VALUE_n
 * environment variables: never in arguments (every user of the machine sees those in `ps`), never
 * in the repository URL (git would store it and print it). With credentials, redirects are not
 * followed, so the header is never sent to another host; nor with pinned addresses, so that no
 * unchecked host is reached. With pinned addresses no proxy is used either: a proxy resolves the
 * host itself, so the addresses checked would not be the ones reached.
 */
import { Buffer } from 'node:buffer';
import process from 'node:process';
import type { GitCredentials, GitProtocol } from './git-settings.ts';

/** Variables of this process that git may see: where it is, proxies, CA trust, the ssh agent. */
const PASSED_THROUGH = [
  'PATH',
  'http_proxy',
  'https_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'all_proxy',
  'ALL_PROXY',
  'no_proxy',
  'NO_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'CURL_CA_BUNDLE',
  'SSH_AUTH_SOCK',
] as const;

export interface GitEnvironment {
  readonly env: Readonly<Record<string, string>>;
  /** `-c name=value` arguments that go before every git subcommand. */
  readonly configArgs: readonly string[];
  /** Every form the credentials take, to scrub from anything shown. */
  readonly secrets: readonly string[];
}

export interface GitEnvironmentOptions {
  /** An empty directory: git's HOME. */
  readonly home: string;
  readonly protocols: readonly GitProtocol[];
  readonly credentials: GitCredentials | null;
  /** `host:port:address[,address]`: the only addresses curl may connect to for that host (git-address-pin.ts). */
  readonly pinnedAddresses?: string | null;
}

export function gitEnvironment(options: GitEnvironmentOptions): GitEnvironment {
  const pinned = options.pinnedAddresses ?? null;
  const protocols = options.protocols.filter((p) => (p as string) !== 'ext');
  const env: Record<string, string> = {};
  for (const name of PASSED_THROUGH) {
    // A proxy resolves the host itself: the pinned addresses would not be the ones reached.
    if (pinned !== null && /proxy/i.test(name)) continue;
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, {
    HOME: options.home,
    XDG_CONFIG_HOME: `${options.home}/.config`,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: protocols.join(':'),
    GIT_PROTOCOL_FROM_USER: '0',
    // ssh must fail rather than ask for a passphrase or a host key confirmation.
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes',
    // Paths are file names, never pathspec magic (`:(glob)...`).
    GIT_LITERAL_PATHSPECS: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    // Messages in English, which git-failure.ts matches.
    LC_ALL: 'C',
    LANG: 'C',
  });

  const config: Record<string, string> = {
    'core.hooksPath': '/dev/null',
    'core.fsmonitor': 'false',
    'credential.helper': '',
    'protocol.allow': 'never',
    'protocol.ext.allow': 'never',
    'protocol.file.allow': protocols.includes('file') ? 'always' : 'never',
    // A redirect would carry the credentials, or lead to a host whose address was not checked.
    'http.followRedirects': options.credentials === null && pinned === null ? 'initial' : 'false',
    'submodule.recurse': 'false',
    'fetch.recurseSubmodules': 'false',
    // What a remote sends is checked to be well-formed git objects before it is kept.
    'fetch.fsckObjects': 'true',
    'gc.auto': '0',
    'maintenance.auto': 'false',
  };
  for (const protocol of protocols) config[`protocol.${protocol}.allow`] = 'always';
  if (pinned !== null) config['http.curloptResolve'] = pinned;
  const configArgs = Object.entries(config).flatMap(([name, value]) => ['-c', `${name}=${value}`]);

  const secrets: string[] = [];
  if (options.credentials !== null) {
    const { username, password } = options.credentials;
    const basic = Buffer.from(`${username}:${password}`).toString('base64');
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
    secrets.push(password, basic, `${username}:${password}`, encodeURIComponent(password));
  }
  return { env, configArgs, secrets };
}
