/**
 * What one MCPServer resource means to the registry: a server.json document (the official MCP
 * registry's ServerDetail, schema 2025-12-11) and the entry's claims, or the reason it cannot be
 * one. Cluster-resource sources (manifest files, or a Kubernetes cluster watched live) hold such
 * resources; this file is their common rule, modelled on ToolHive's registry server
 * (stacklok/toolhive-registry-server, internal/kubernetes: builder.go, types.go, naming.go,
 * controller.go, and its docs/configuration.md "Kubernetes" section):
 *
 * - A resource is exported only when it opts in: annotation `toolhive.stacklok.dev/registry-export`
 *   is exactly "true". Others are none of the registry's business (a cluster runs servers that
 *   are not meant to be listed). Any other value than "true"/"false" is named as a mistake.
 * - Name: `com.toolhive.k8s.<namespace>/<metadata.name>` (ToolHive's, so clients find the same
 *   names). There is no override: the namespace in the name says whose resource it is, so a
 *   tenant of one namespace cannot publish under another's name or a public one.
 * - Version: annotation `registry-version`, else the image's tag, else "1.0.0"; a version is a
 *   strict `MAJOR.MINOR.PATCH[-prerelease]` (optionally `v`-prefixed, no `+build`). A tag that is
 *   not one (`latest`, `main`, a digest) falls through, as in ToolHive; an annotation that is not
 *   one is refused (ToolHive only logs it: here it is named in the source's status).
 * - Description: annotation `registry-description` (1 to 100 characters, the schema's bound),
 *   else "MCP server <namespace>/<name>". Title (`registry-title`) and icon (`registry-icon`, an
 *   https URL) are optional.
 * - Remote: annotation `registry-url`, else `spec.url` (Gatehouse's own MCPServer), else
 *   `status.url` (what ToolHive's operator publishes once the server runs); `sse` when the server
 *   speaks SSE (transport sse, or stdio behind an SSE proxy), `streamable-http` otherwise.
 * - Package: `spec.image` as an OCI package (the reference carries the tag), with the transport
 *   the image itself speaks. A resource with neither a URL nor an image is refused.
 * - Claims: annotation `toolhive.stacklok.dev/authz-claims`, a JSON object of string values,
 *   read by the parser the gateway's claims filter uses too (registry-authz/claims-annotation.ts).
 *   Entries never inherit the source's claims (those only say who manages the source); without
 *   the annotation the entry has no claims. A malformed annotation refuses the resource: a
 *   typo must not make an entry visible to everyone.
 *
 * Every annotation is also read under the `gatehouse.dev/` prefix (Gatehouse's own MCPServer
 * resources use that API group); when both are set they must agree.
 */
import { ANNOTATION_PREFIXES, ClaimsAnnotationError, describe, parseClaims, quote } from '../../registry-authz/claims-annotation.ts';
import type { ClaimMap } from '../../registry-authz/claims.ts';
import { documentDigest } from '../store/entries-store.ts';
import type { SyncItem } from '../store/source-sync-writer.ts';
import { jsonValueProblem } from '../model/json-value.ts';
import { entryNameProblem } from '../model/names.ts';
import { describeProblems, serverJsonProblems } from '../model/server-json.ts';

export const SERVER_SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';

/** ToolHive's prefix for entries discovered in a cluster. */
export const SERVER_NAME_PREFIX = 'com.toolhive.k8s';
export const DEFAULT_SERVER_VERSION = '1.0.0';
/** Where the entry's provenance goes in the document's publisher-provided `_meta`. */
export const PROVENANCE_META_KEY = 'dev.gatehouse/kubernetes';

/** The annotations read, by their name after the prefix. */
const ANNOTATIONS = ['registry-export', 'registry-url', 'registry-description', 'registry-title', 'registry-icon', 'registry-version', 'authz-claims'] as const;
type AnnotationName = (typeof ANNOTATIONS)[number];

/** The fields of `spec` the mapping reads (the rest of a resource is dropped when it is kept in memory). */
const SPEC_FIELDS = ['url', 'image', 'transport', 'proxyMode', 'mcpPort', 'targetPort'] as const;

const MAX_DESCRIPTION = 100;
const MAX_TITLE = 100;
const MAX_ICON_URL = 255;
const MAX_URL = 2048;
const MAX_IMAGE = 512;
const MAX_VERSION = 255;

/** The parts of a resource the mapping reads: what a watch keeps in memory per resource. */
export interface ClusterResource {
  readonly apiVersion: unknown;
  readonly kind: unknown;
  readonly metadata: {
    readonly name: unknown;
    readonly namespace: unknown;
    readonly uid: unknown;
    /** Only the registry's annotations (both prefixes). */
    readonly annotations: Readonly<Record<string, unknown>>;
  };
  readonly spec: Readonly<Record<string, unknown>>;
  readonly status: { readonly url: unknown };
}

export type ResourceMapping =
  | { readonly item: SyncItem & { readonly claims: ClaimMap } }
  | { readonly problem: string }
  /** Not exported: the resource did not opt in with `registry-export: "true"`. */
  | { readonly ignored: true };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pick(source: unknown, fields: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  if (!isObject(source)) return picked;
  for (const field of fields) if (Object.hasOwn(source, field) && source[field] !== undefined) picked[field] = source[field];
  return picked;
}

/** Whether a Kubernetes object (or manifest document) is an MCPServer. */
export function isMcpServer(object: unknown): boolean {
  return isObject(object) && object.kind === 'MCPServer';
}

/** The parts of `object` the mapping reads; everything else (pod templates, conditions) is dropped. */
export function slimResource(object: Record<string, unknown>): ClusterResource {
  const metadata = isObject(object.metadata) ? object.metadata : {};
  const annotations: Record<string, unknown> = {};
  if (isObject(metadata.annotations)) {
    for (const prefix of ANNOTATION_PREFIXES) {
      for (const name of ANNOTATIONS) {
        const key = prefix + name;
        if (Object.hasOwn(metadata.annotations, key)) annotations[key] = metadata.annotations[key];
      }
    }
  }
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: { name: metadata.name, namespace: metadata.namespace, uid: metadata.uid, annotations },
    spec: pick(object.spec, SPEC_FIELDS),
    status: { url: isObject(object.status) ? object.status.url : undefined },
  };
}

/** `namespace/name` of a resource, as messages name it (Kubernetes puts an unset namespace in "default"). */
export function resourceLabel(resource: ClusterResource): string {
  const { name, namespace } = resource.metadata;
  const ns = typeof namespace === 'string' && namespace !== '' ? namespace : 'default';
  return typeof name === 'string' && name !== '' ? `MCPServer ${quoteIfOdd(ns)}/${quoteIfOdd(name)}` : `MCPServer in namespace ${quoteIfOdd(ns)} without metadata.name`;
}

function quoteIfOdd(text: string): string {
  return /^[A-Za-z0-9._-]{1,253}$/.test(text) ? text : quote(text);
}

const HAS_CONTROL = /[\x00-\x1f\x7f]/;

class Refusal extends Error {}

/**
 * Maps one MCPServer to an entry, or says why it cannot be one. `origin` (a file and document)
 * is added to the message of a refusal.
 */
export function mapClusterResource(resource: ClusterResource, origin?: string): ResourceMapping {
  try {
    const annotations = readAnnotations(resource);
    const exported = annotations['registry-export'];
    if (exported === undefined || exported === 'false') return { ignored: true };
    if (exported !== 'true') throw new Refusal(`annotation ${annotationKey('registry-export')} is ${quote(exported)}: set it to "true" to list the server in the registry (or "false")`);

    const { name: rawName, namespace: rawNamespace } = resource.metadata;
    if (typeof rawName !== 'string' || rawName === '') throw new Refusal('metadata.name is required');
    if (rawNamespace !== undefined && rawNamespace !== null && typeof rawNamespace !== 'string') throw new Refusal(`metadata.namespace must be a string (got ${describe(rawNamespace)})`);
    const namespace = typeof rawNamespace === 'string' && rawNamespace !== '' ? rawNamespace : 'default';
    const name = `${SERVER_NAME_PREFIX}.${namespace}/${rawName}`;
    const nameProblem = entryNameProblem(name);
    if (nameProblem !== null) throw new Refusal(`its registry name is not valid (namespace and metadata.name must be DNS names): ${nameProblem}`);

    const spec = resource.spec;
    const image = optionalText(spec.image, 'spec.image', MAX_IMAGE);
    if (image !== null && /\s/.test(image)) throw new Refusal(`spec.image ${quote(image)} is not an image reference`);
    const version = resolveVersion(annotations['registry-version'], image);
    const description = resolveDescription(annotations['registry-description'], `MCP server ${namespace}/${rawName}`);
    const transport = resolveTransport(resource);

    const document: Record<string, unknown> = { $schema: SERVER_SCHEMA_URL, name, description, version };
    const title = annotations['registry-title']?.trim();
    if (title !== undefined && title !== '') {
      if (title.length > MAX_TITLE) throw new Refusal(`annotation ${annotationKey('registry-title')} is longer than ${MAX_TITLE} characters`);
      document.title = title;
    }
    const icon = annotations['registry-icon']?.trim();
    if (icon !== undefined && icon !== '') document.icons = [{ src: iconUrl(icon) }];

    const url = resolveUrl(annotations['registry-url'], resource);
    if (url !== null) document.remotes = [{ type: transport.remote, url }];
    if (image !== null) document.packages = [{ registryType: 'oci', identifier: image, transport: packageTransport(transport.image, spec) }];
    if (url === null && image === null) {
      throw new Refusal(`it has no URL (annotation ${annotationKey('registry-url')}, spec.url or status.url) and no image (spec.image): nothing to connect to or run`);
    }

    const provenance: Record<string, unknown> = { kind: 'MCPServer', namespace, name: rawName };
    if (typeof resource.apiVersion === 'string') provenance.apiVersion = resource.apiVersion;
    if (typeof resource.metadata.uid === 'string' && resource.metadata.uid !== '') provenance.uid = resource.metadata.uid;
    document._meta = { 'io.modelcontextprotocol.registry/publisher-provided': { [PROVENANCE_META_KEY]: provenance } };

    const claims = claimsOf(annotations['authz-claims']);
    const documentProblem = jsonValueProblem(document);
    if (documentProblem !== null) throw new Refusal(`its server.json is not valid: ${documentProblem.replace(/^\$/, 'the document')}`);
    // What the registry serves validates against the schema it advertises, whatever a resource holds.
    const schemaProblems = serverJsonProblems(document);
    if (schemaProblems.length > 0) throw new Refusal(`its server.json is not valid: ${describeProblems(schemaProblems)}`);
    return { item: { kind: 'server', name, version, document, digest: documentDigest(document), claims } };
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return { problem: `${resourceLabel(resource)}: ${err.message}${origin === undefined ? '' : ` (${origin})`}` };
  }
}

function annotationKey(name: AnnotationName): string {
  return `${ANNOTATION_PREFIXES[0]}${name}`;
}

/** The registry's annotations, each read under both prefixes. */
function readAnnotations(resource: ClusterResource): Partial<Record<AnnotationName, string>> {
  const read: Partial<Record<AnnotationName, string>> = {};
  const all = resource.metadata.annotations;
  for (const name of ANNOTATIONS) {
    let found: { key: string; value: string } | null = null;
    for (const prefix of ANNOTATION_PREFIXES) {
      const key = prefix + name;
      if (!Object.hasOwn(all, key)) continue;
      const value = all[key];
      // Kubernetes annotations are strings; a manifest may hold `registry-export: true` unquoted.
      if (typeof value !== 'string') throw new Refusal(`annotation ${key} must be a string (got ${describe(value)}): quote the value`);
      if (found !== null && found.value !== value) throw new Refusal(`annotations ${found.key} and ${key} disagree: set one of them`);
      found = { key, value };
    }
    if (found !== null) read[name] = found.value;
  }
  return read;
}

function optionalText(value: unknown, field: string, max: number): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw new Refusal(`${field} must be a string (got ${describe(value)})`);
  if (value.length > max) throw new Refusal(`${field} is longer than ${max} characters`);
  if (HAS_CONTROL.test(value)) throw new Refusal(`${field} must not contain control characters`);
  return value;
}

// ---- version --------------------------------------------------------------------------------

const NUMBER = '(0|[1-9]\\d*)';
const PRERELEASE_PART = '(0|[1-9]\\d*|\\d*[A-Za-z-][0-9A-Za-z-]*)';
/** Strict semantic version, as ToolHive's `versions.IsPublishable` (Masterminds' StrictNewVersion, `v` allowed, no build metadata). */
const PUBLISHABLE_VERSION = new RegExp(`^v?${NUMBER}\\.${NUMBER}\\.${NUMBER}(-${PRERELEASE_PART}(\\.${PRERELEASE_PART})*)?$`);

export function isPublishableVersion(version: string): boolean {
  return version.length <= MAX_VERSION && PUBLISHABLE_VERSION.test(version);
}

/**
 * The tag of an image reference, or '' when it has none. A digest is not a version (it does not
 * order), and a colon before the last "/" is a registry's port (`registry:5000/db` is untagged).
 */
export function imageTag(image: string): string {
  const reference = image.includes('@') ? image.slice(0, image.indexOf('@')) : image;
  const colon = reference.lastIndexOf(':');
  if (colon === -1 || reference.lastIndexOf('/') > colon) return '';
  return reference.slice(colon + 1);
}

function resolveVersion(annotated: string | undefined, image: string | null): string {
  const wanted = annotated?.trim();
  if (wanted !== undefined && wanted !== '') {
    if (!isPublishableVersion(wanted)) {
      throw new Refusal(`annotation ${annotationKey('registry-version')} is ${quote(wanted)}: use a version such as "1.2.0" or "2.0.0-rc.1" (MAJOR.MINOR.PATCH, no build metadata)`);
    }
    return wanted;
  }
  const tag = image === null ? '' : imageTag(image).trim();
  return isPublishableVersion(tag) ? tag : DEFAULT_SERVER_VERSION;
}

// ---- description, URLs --------------------------------------------------------------------

function resolveDescription(annotated: string | undefined, fallback: string): string {
  const description = annotated?.trim();
  if (description === undefined || description === '') return fallback.length > MAX_DESCRIPTION ? `${fallback.slice(0, MAX_DESCRIPTION - 1)}…` : fallback;
  if (description.length > MAX_DESCRIPTION) {
    throw new Refusal(`annotation ${annotationKey('registry-description')} is ${description.length} characters long: the registry allows at most ${MAX_DESCRIPTION}`);
  }
  return description;
}

/** An http(s) URL without credentials: the document is served to whoever may read the entry. */
function httpUrl(text: string, field: string, max: number): URL {
  if (text.length > max) throw new Refusal(`${field} is longer than ${max} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Refusal(`${field} ${quote(text)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Refusal(`${field} ${quote(`${url.protocol}//${url.host}`)} must be an http or https URL`);
  if (url.username !== '' || url.password !== '') throw new Refusal(`${field} must not contain credentials (user:password@): the registry would publish them`);
  return url;
}

function resolveUrl(annotated: string | undefined, resource: ClusterResource): string | null {
  const candidates: [unknown, string][] = [
    [annotated?.trim(), `annotation ${annotationKey('registry-url')}`],
    [resource.spec.url, 'spec.url'],
    [resource.status.url, 'status.url'],
  ];
  for (const [value, field] of candidates) {
    const text = optionalText(value, field, MAX_URL);
    if (text === null) continue;
    httpUrl(text, field, MAX_URL);
    return text;
  }
  return null;
}

function iconUrl(text: string): string {
  const field = `annotation ${annotationKey('registry-icon')}`;
  const url = httpUrl(text, field, MAX_ICON_URL);
  if (url.protocol !== 'https:') throw new Refusal(`${field} must be an https URL (the server.json schema's rule for icons)`);
  return text;
}

// ---- transports ---------------------------------------------------------------------------

type Transport = 'stdio' | 'streamable-http' | 'sse';
const TRANSPORTS: readonly Transport[] = ['stdio', 'streamable-http', 'sse'];

/**
 * What the image speaks, and what its endpoint (the URL) speaks. ToolHive's MCPServer defaults to
 * stdio (its proxy turns it into `proxyMode`, streamable-http by default); Gatehouse's own
 * MCPServer only knows streamable-http.
 */
function resolveTransport(resource: ClusterResource): { image: Transport; remote: 'streamable-http' | 'sse' } {
  const isToolHive = typeof resource.apiVersion === 'string' && resource.apiVersion.startsWith('toolhive.stacklok.dev/');
  const transport = oneOf(resource.spec.transport, 'spec.transport', TRANSPORTS) ?? (isToolHive ? 'stdio' : 'streamable-http');
  const proxyMode = oneOf(resource.spec.proxyMode, 'spec.proxyMode', ['streamable-http', 'sse'] as const) ?? 'streamable-http';
  const remote = transport === 'sse' || (transport === 'stdio' && proxyMode === 'sse') ? 'sse' : 'streamable-http';
  return { image: transport, remote };
}

function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new Refusal(`${field} is ${describe(value)}: use one of ${allowed.join(', ')}`);
}

/** An HTTP package transport needs a URL: the port the container listens on, on the machine that runs it. */
function packageTransport(transport: Transport, spec: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (transport === 'stdio') return { type: 'stdio' };
  let port = 8080;
  for (const field of ['mcpPort', 'targetPort'] as const) {
    const value = spec[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw new Refusal(`spec.${field} must be a port number (got ${describe(value)})`);
    port = value;
    break;
  }
  return { type: transport, url: `http://localhost:${port}/${transport === 'sse' ? 'sse' : 'mcp'}` };
}

// ---- claims -------------------------------------------------------------------------------

/** The entry's claims (claims become rows of an index the store queries: the parser bounds them). */
function claimsOf(annotated: string | undefined): ClaimMap {
  try {
    return parseClaims(annotated);
  } catch (err) {
    if (err instanceof ClaimsAnnotationError) throw new Refusal(err.message);
    throw err;
  }
}
