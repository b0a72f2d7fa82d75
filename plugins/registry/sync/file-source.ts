/**
 * The reader of a file source: the file at `file.path` on the server's disk, in the upstream
 * format. Unchanged content (the digest of the last good sync) is not parsed or written again.
 * The file is read whole but bounded, so a mistaken path (a device, a huge log) fails cleanly.
 *
 * The file is opened without blocking (a FIFO or a device would otherwise hold a thread of the
 * process's pool in open() for ever, and with it every file, DNS and crypto call waiting behind
 * it) and must be a regular file. A source created through the admin API reads only under
 * `sync.fileRoot`: what was checked at the PUT may since have become a symbolic link out of it,
 * so where the opened file really is is checked again at every read.
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, relative, sep } from 'node:path';
import { Buffer } from 'node:buffer';
import type { ReadContext, ReadOutcome, SourceReader } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';
import { contentDigest, parseUpstreamFile } from './upstream-file.ts';

/** Default bound of a source file: the official registry's whole data is a few MiB. */
export const MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024;

export interface FileReaderOptions {
  readonly maxBytes?: number;
  /** The directory the file must really be in (sources created through the API: `sync.fileRoot`); null: anywhere. */
  readonly root?: string | null;
}

export function createFileReader(path: string, options: FileReaderOptions = {}): SourceReader {
  const maxBytes = options.maxBytes ?? MAX_SOURCE_FILE_BYTES;
  const root = options.root ?? null;
  return {
    async read({ previous }: ReadContext): Promise<ReadOutcome> {
      const content = await readBounded(path, maxBytes, root);
      const digest = contentDigest(content);
      if (previous?.digest === digest) return { type: 'unchanged' };
      const parsed = parseUpstreamFile(content);
      if (!parsed.ok) throw new SyncFailure(`${path}: ${parsed.message}`);
      return { type: 'snapshot', items: parsed.items, skipped: parsed.skipped, digest };
    },
  };
}

/** Whether `candidate` is strictly inside `base` (both absolute, symbolic links resolved). */
export function isInside(candidate: string, base: string): boolean {
  const rel = relative(base, candidate);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** Where the file open as `fd` (opened as `path`) really is: /proc names the file itself; elsewhere, `path` resolved now. */
async function openedPath(fd: number, path: string): Promise<string> {
  try {
    return await realpath(`/proc/self/fd/${fd}`);
  } catch {
    return realpath(path);
  }
}

async function readBounded(path: string, maxBytes: number, root: string | null): Promise<string> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SyncFailure(code === 'ENOENT' ? `file ${path} does not exist` : `file ${path} cannot be read: ${(err as Error).message}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new SyncFailure(`${path} is not a regular file`);
    if (root !== null) {
      const [real, realRoot] = await Promise.all([openedPath(handle.fd, path), realpath(root)]);
      if (!isInside(real, realRoot)) throw new SyncFailure(`${path} is not under ${root} (sync.fileRoot), where the sources created through the API read: a symbolic link leads out of it`);
    }
    if (info.size > maxBytes) throw new SyncFailure(`file ${path} is ${info.size} bytes, over the ${maxBytes}-byte bound of a source file`);
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new SyncFailure(`file ${path} grew over the ${maxBytes}-byte bound of a source file while it was read`);
    return buffer.subarray(0, length).toString('utf8');
  } catch (err) {
    if (err instanceof SyncFailure) throw err;
    throw new SyncFailure(`file ${path} cannot be read: ${(err as Error).message}`);
  } finally {
    await handle.close();
  }
}
