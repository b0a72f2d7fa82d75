/**
 * What a registry says of its servers, checked before any of it reaches the group: the registry
 * is another party, and what it answers is read as a hostile peer's would be.
 *
 * The answer is the registry server's admin listing of a registry
 * (`GET /v1/registries/{name}/entries`: `{entries: [...], metadata: {nextCursor}}`), the one
 * place its API gives each entry's claims. An entry becomes a server of the group when it is a
 * server (skills are not MCP servers) whose latest version has a `streamable-http` remote whose
 * URL passes every rule below; any other is skipped with the reason, naming the entry:
 *
 *  - name: the official registry's `namespace/name` (3 to 200 characters, `^[A-Za-z0-9.-]+/[A-Za-z0-9._-]+$`);
 *  - claims: a JSON object of strings (at most 32, keys of 128 characters, values of 256, no
 *    control characters): an entry whose claims cannot be read is never served without them;
 *  - remote URL: at most 2048 characters, `http` or `https`, no user name or password, no
 *    whitespace or control characters (CR, LF and NUL among them), no `{variables}` (a template
 *    needs values the gateway does not have), a host.
 */

/** A registry's server as the group takes it. */
export interface FedServer {
  /** The entry's name in the registry (`io.github.acme/weather`). */
  readonly entry: string;
  /** The streamable-http remote of its latest version. */
  readonly url: string;
  /** The entry's claims (who may see it), as the registry keeps them. */
  readonly claims: Readonly<Record<string, string>>;
}

/** One page of the admin listing. */
export interface EntriesPage {
  readonly entries: readonly unknown[];
  readonly nextCursor: string | null;
}

/** What is wrong with a whole answer: the read fails, and the last good list stays. */
export class RegistryAnswerError extends Error {
  override readonly name = 'RegistryAnswerError';
}

export type EntryOutcome =
  | { readonly kind: 'server'; readonly server: FedServer }
  /** A skill: not a server, and the listing has no server after it (servers sort first). */
  | { readonly kind: 'skill' }
  /** Skipped; `warn`: something is wrong with it (else it is only not servable, e.g. no remote). */
  | { readonly kind: 'skipped'; readonly entry: string; readonly reason: string; readonly warn: boolean };

const NAME = /^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/;
const CONTROL = /[\x00-\x1f\x7f]/;
const MAX_URL = 2048;
const MAX_CLAIMS = 32;
const MAX_CLAIM_KEY = 128;
const MAX_CLAIM_VALUE = 256;
const MAX_CURSOR = 1024;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value from the registry as a message may show it: quoted, escaped, cut short. */
export function shown(value: unknown): string {
  const text = typeof value === 'string' ? value : String(JSON.stringify(value) ?? typeof value);
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

/** One page of the listing, or a RegistryAnswerError saying what is wrong with its shape. */
export function parseEntriesPage(answer: unknown): EntriesPage {
  if (!isObject(answer) || !Array.isArray(answer.entries)) throw new RegistryAnswerError('the answer is not an entry listing ({"entries": [...], "metadata": {...}})');
  const metadata = answer.metadata;
  if (metadata !== undefined && !isObject(metadata)) throw new RegistryAnswerError('the answer\'s "metadata" is not an object');
  const cursor = metadata?.nextCursor;
  if (cursor === undefined || cursor === null) return { entries: answer.entries, nextCursor: null };
  if (typeof cursor !== 'string' || cursor === '' || cursor.length > MAX_CURSOR || CONTROL.test(cursor)) {
    throw new RegistryAnswerError(`the answer's "metadata.nextCursor" is not a cursor (a string of 1 to ${MAX_CURSOR} characters without control characters)`);
  }
  return { entries: answer.entries, nextCursor: cursor };
}

/** Why `url` cannot be a backend's address, or null. */
export function remoteUrlProblem(url: unknown): string | null {
  if (typeof url !== 'string' || url === '') return 'its remote has no URL';
  if (url.length > MAX_URL) return `its remote URL is longer than ${MAX_URL} characters`;
  if (CONTROL.test(url)) return 'its remote URL holds control characters (CR, LF, NUL or others)';
  if (/\s/.test(url)) return 'its remote URL holds whitespace';
  if (/[{}]/.test(url)) return `its remote URL ${shown(url)} is a template with {variables}, which the gateway has no values for`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `its remote URL ${shown(url)} is not a URL`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `its remote URL ${shown(url)} is not http or https`;
  // Not echoed: the URL holds a credential.
  if (parsed.username !== '' || parsed.password !== '') return 'its remote URL carries a user name or password';
  if (parsed.hostname === '') return `its remote URL ${shown(url)} has no host`;
  return null;
}

/** The entry's claims, or why they cannot be read. */
function claimsOf(claims: unknown): Readonly<Record<string, string>> | string {
  if (claims === undefined || claims === null) return {};
  if (!isObject(claims)) return 'its claims are not an object of strings';
  const keys = Object.keys(claims);
  if (keys.length > MAX_CLAIMS) return `it has more than ${MAX_CLAIMS} claims`;
  const out: Record<string, string> = {};
  for (const key of keys.sort()) {
    const value = claims[key];
    if (typeof value !== 'string') return `its claim ${shown(key)} is not a string`;
    if (key === '' || key.length > MAX_CLAIM_KEY || CONTROL.test(key)) return `its claim ${shown(key)} has a name that is empty, longer than ${MAX_CLAIM_KEY} characters or holds control characters`;
    if (value.length > MAX_CLAIM_VALUE || CONTROL.test(value)) return `its claim ${shown(key)} has a value longer than ${MAX_CLAIM_VALUE} characters or holding control characters`;
    out[key] = value;
  }
  return out;
}

/** The latest version's document: the version marked latest, else the first (the listing puts the newest first). */
function latestDocument(versions: unknown): Record<string, unknown> | string {
  if (!Array.isArray(versions) || versions.length === 0) return 'it has no versions';
  const latest = versions.find((v) => isObject(v) && v.isLatest === true) ?? versions[0];
  if (!isObject(latest) || !isObject(latest.server)) return 'its latest version has no server document';
  return latest.server;
}

/** The URL of the first `streamable-http` remote, or null when there is none. */
function streamableRemote(document: Record<string, unknown>): { url: unknown } | null {
  const remotes = document.remotes;
  if (!Array.isArray(remotes)) return null;
  for (const remote of remotes) if (isObject(remote) && remote.type === 'streamable-http') return { url: remote.url };
  return null;
}

/** One entry of the listing, checked. */
export function readEntry(raw: unknown): EntryOutcome {
  if (!isObject(raw)) return { kind: 'skipped', entry: shown(raw), reason: 'it is not an object', warn: true };
  if (raw.type === 'skill') return { kind: 'skill' };
  const name = raw.name;
  if (typeof name !== 'string' || name.length < 3 || name.length > 200 || !NAME.test(name)) {
    return { kind: 'skipped', entry: shown(name), reason: 'its name is not a registry name (namespace/name of letters, digits, ".", "_" and "-", 3 to 200 characters)', warn: true };
  }
  const skip = (reason: string, warn = true): EntryOutcome => ({ kind: 'skipped', entry: name, reason, warn });
  if (raw.type !== 'server') return skip(`its type ${shown(raw.type)} is neither server nor skill`);
  const claims = claimsOf(raw.claims);
  if (typeof claims === 'string') return skip(claims);
  const document = latestDocument(raw.versions);
  if (typeof document === 'string') return skip(document);
  if (document.name !== undefined && document.name !== name) return skip(`its latest version's document is named ${shown(document.name)}, not as the entry`);
  const remote = streamableRemote(document);
  if (remote === null) return skip('its latest version has no streamable-http remote (a package alone is a server to run, which the gateway does not)', false);
  const problem = remoteUrlProblem(remote.url);
  if (problem !== null) return skip(problem);
  return { kind: 'server', server: { entry: name, url: remote.url as string, claims } };
}
