/**
 * git's error output turned into a message an operator can act on. git runs with LC_ALL=C
 * (git-environment.ts), so its messages are the English ones matched here. Whatever of stderr is
 * quoted is scrubbed first: the credentials in every form they travel in (the password, the
 * Basic value, URL-encoded) become `***`, and a remote's text (`remote: ...` lines, which a
 * hostile server writes) loses its control characters and is cut short.
 */

const MAX_QUOTED = 300;

/** `text` with every secret replaced by `***` and control characters (ANSI escapes included) removed. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) out = out.split(secret).join('***');
  return out.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '').replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, '');
}

/** The lines of git's stderr that say what went wrong (`fatal:`/`error:` first), scrubbed, in one short line. */
export function gitSaid(stderr: string, secrets: readonly string[]): string {
  const lines = scrub(stderr, secrets)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const errors = lines.filter((line) => /^(fatal|error):/.test(line)).map((line) => line.replace(/^(fatal|error):\s*/, ''));
  const chosen = (errors.length > 0 ? errors : lines.slice(-2)).join('; ');
  if (chosen.length === 0) return 'no message';
  return chosen.length > MAX_QUOTED ? `${chosen.slice(0, MAX_QUOTED)}…` : chosen;
}

export interface FailureContext {
  /** The repository address as configured (it never carries credentials: git-settings.ts refuses them). */
  readonly repository: string;
  readonly credentialsGiven: boolean;
  readonly secrets: readonly string[];
}

/** Why a git command that talked to the remote failed, for the operator. */
export function remoteFailure(stderr: string, context: FailureContext): string {
  const said = gitSaid(stderr, context.secrets);
  const where = context.repository;
  if (/could not read (Username|Password)|Authentication failed|HTTP Basic: Access denied|returned error: 401/i.test(stderr)) {
    return context.credentialsGiven
      ? `authentication refused by ${where}: the credentials in the source's auth were not accepted`
      : `authentication required by ${where}: it is private, give credentials in the source's auth`;
  }
  if (/returned error: 403/.test(stderr)) return `access to ${where} refused (HTTP 403): the credentials do not give read access (${said})`;
  if (/Permission denied \(publickey|Permission denied, please try again/.test(stderr)) return `ssh authentication to ${where} failed: no key of this server's user is accepted (${said})`;
  if (/Host key verification failed|No .* host key is known/.test(stderr)) return `the ssh host key of ${where} is not known to this server's user (add it to known_hosts)`;
  if (/transport '[^']*' not allowed/.test(stderr)) return `${where} uses a transport that is not allowed (${said})`;
  if (/repository '[^']*' not found|Repository not found|does not appear to be a git repository|returned error: 404/i.test(stderr)) return `repository ${where} not found (${said})`;
  if (/Could not resolve host|Could not resolve hostname|Name or service not known|Temporary failure in name resolution/i.test(stderr)) return `repository ${where} is unreachable: its host name does not resolve (${said})`;
  if (/Failed to connect|Couldn't connect|Connection refused|Connection timed out|Network is unreachable|No route to host|unable to connect|Connection reset/i.test(stderr)) return `repository ${where} is unreachable (${said})`;
  if (/SSL|certificate|TLS/i.test(stderr)) return `TLS with ${where} failed (${said})`;
  if (/redirect/i.test(stderr)) return `${where} answered with a redirect, which is not followed (${said})`;
  return `git failed with ${where}: ${said}`;
}
