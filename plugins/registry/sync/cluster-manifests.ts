/**
 * Cluster resources from manifest files, for a registry that runs outside the cluster (or
 * without one): each path is a file, or a directory whose `*.yaml`, `*.yml` and `*.json` files are
 * read (not its subdirectories, like `kubectl apply -f DIR`). A file holds one or more YAML
 * documents (`---`); each MCPServer among them is a resource, and so is each MCPServer in the
 * `items` of a list (`kubectl get mcpservers -o yaml` writes `kind: List`). Other kinds are
 * ignored: the same files may hold a whole vMCP configuration.
 *
 * A path that cannot be read, a file that is not text or not YAML, or more files or bytes than
 * the limits fail the read as a whole (the source keeps its last good data: a half-written file
 * must not withdraw its servers); a resource that cannot be mapped is only skipped (see
 * cluster-resource.ts).
 */
import { open, readdir, stat } from 'node:fs/promises';
import { extname, isAbsolute, join, relative, resolve } from 'node:path';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { parseYamlDocuments } from '@gatehouse-mcp/gateway';
import type { ClusterResource } from './cluster-resource.ts';
import { isMcpServer, slimResource } from './cluster-resource.ts';
import { SyncFailure } from './source-reader.ts';

export interface ManifestLimits {
  /** Files read in all (default 1,000). */
  readonly maxFiles: number;
  /** Bytes of one file (default 4 MiB). */
  readonly maxFileBytes: number;
  /** Bytes of all files together (default 64 MiB). */
  readonly maxTotalBytes: number;
  /** MCPServer resources in all (default 10,000). */
  readonly maxResources: number;
}

export const DEFAULT_MANIFEST_LIMITS: ManifestLimits = {
  maxFiles: 1_000,
  maxFileBytes: 4 * 1024 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
  maxResources: 10_000,
};

export interface ManifestResource {
  readonly resource: ClusterResource;
  /** Where it was found, for messages: `servers/a.yaml, document 2`. */
  readonly origin: string;
}

const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

export interface ManifestReadOptions {
  /** Where relative paths resolve (the config file's directory); default: the working directory. */
  readonly baseDir?: string;
  readonly limits?: Partial<ManifestLimits>;
  readonly signal?: AbortSignal;
}

/** Every MCPServer of the manifests at `paths`, in file order. Throws SyncFailure. */
export async function readManifestResources(paths: readonly string[], options: ManifestReadOptions = {}): Promise<ManifestResource[]> {
  const limits = { ...DEFAULT_MANIFEST_LIMITS, ...options.limits };
  const baseDir = options.baseDir ?? process.cwd();
  const shown = (file: string): string => {
    const inside = relative(baseDir, file);
    return inside !== '' && !inside.startsWith('..') && !isAbsolute(inside) ? inside : file;
  };

  const files = await manifestFiles(paths.map((path) => resolve(baseDir, path)), limits, shown);
  const resources: ManifestResource[] = [];
  let totalBytes = 0;
  for (const file of files) {
    if (options.signal?.aborted) throw new SyncFailure('the read was stopped');
    const bytes = await readBounded(file, limits.maxFileBytes, shown(file));
    totalBytes += bytes.length;
    if (totalBytes > limits.maxTotalBytes) throw new SyncFailure(`the manifests are larger than ${formatBytes(limits.maxTotalBytes)} in all`);
    for (const found of manifestResources(decode(bytes, shown(file)), shown(file))) {
      if (resources.length >= limits.maxResources) throw new SyncFailure(`the manifests hold more than ${limits.maxResources} MCPServer resources`);
      resources.push(found);
    }
  }
  return resources;
}

/** The files to read: each path, or the manifest files of each directory (sorted), once each. */
async function manifestFiles(paths: readonly string[], limits: ManifestLimits, shown: (file: string) => string): Promise<string[]> {
  const files: string[] = [];
  const seen = new Set<string>();
  const add = (file: string): void => {
    if (seen.has(file)) return;
    if (files.length >= limits.maxFiles) throw new SyncFailure(`the manifest paths hold more than ${limits.maxFiles} files`);
    seen.add(file);
    files.push(file);
  };
  for (const path of paths) {
    const info = await stat(path).catch((err: NodeJS.ErrnoException) => {
      throw new SyncFailure(err.code === 'ENOENT' ? `manifest path ${shown(path)} does not exist` : `manifest path ${shown(path)} cannot be read: ${err.code ?? err.message}`);
    });
    if (info.isFile()) {
      add(path);
      continue;
    }
    if (!info.isDirectory()) throw new SyncFailure(`manifest path ${shown(path)} is neither a file nor a directory`);
    const entries = await readdir(path, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      throw new SyncFailure(`manifest directory ${shown(path)} cannot be listed: ${err.code ?? err.message}`);
    });
    const names = entries.filter((entry) => MANIFEST_EXTENSIONS.has(extname(entry.name).toLowerCase()) && (entry.isFile() || entry.isSymbolicLink())).map((entry) => entry.name);
    for (const name of names.sort()) {
      const file = join(path, name);
      // A symbolic link counts when it leads to a file.
      if (!(await stat(file).then((target) => target.isFile(), () => false))) continue;
      add(file);
    }
  }
  return files;
}

async function readBounded(file: string, maxBytes: number, shownName: string): Promise<Buffer> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw new SyncFailure(`manifest file ${shownName} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    // Read until the end, never more than the bound (the file may grow while it is read).
    for (;;) {
      const chunk = Buffer.alloc(Math.min(64 * 1024, maxBytes + 1 - size));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      size += bytesRead;
      if (size > maxBytes) throw new SyncFailure(`manifest file ${shownName} is larger than ${formatBytes(maxBytes)}`);
    }
    return Buffer.concat(chunks, size);
  } catch (err) {
    if (err instanceof SyncFailure) throw err;
    throw new SyncFailure(`manifest file ${shownName} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  } finally {
    await handle.close();
  }
}

function decode(bytes: Buffer, shownName: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new SyncFailure(`manifest file ${shownName} is not UTF-8 text`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The MCPServers of one file's text. Throws SyncFailure on a YAML syntax error. */
export function manifestResources(text: string, shownName: string): ManifestResource[] {
  const parsed = parseYamlDocuments(text);
  const error = parsed.errors[0];
  if (error !== undefined) {
    throw new SyncFailure(`manifest file ${shownName}:${error.position.line}:${error.position.column}: ${error.message}`);
  }
  const found: ManifestResource[] = [];
  const multi = parsed.documents.length > 1;
  for (const document of parsed.documents) {
    const where = multi ? `${shownName}, document ${document.number}` : shownName;
    const value = document.value;
    if (isMcpServer(value)) found.push({ resource: slimResource(value as Record<string, unknown>), origin: where });
    else if (isObject(value) && typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)) {
      value.items.forEach((item, index) => {
        if (isMcpServer(item)) found.push({ resource: slimResource(item as Record<string, unknown>), origin: `${where}, items[${index}]` });
      });
    }
  }
  return found;
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}
