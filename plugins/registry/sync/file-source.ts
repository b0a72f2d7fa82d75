/**
 * The reader of a file source: the file at `file.path` on the server's disk, in the upstream
 * format. Unchanged content (the digest of the last good sync) is not parsed or written again.
 * The file is read whole but bounded, so a mistaken path (a device, a huge log) fails cleanly.
 */
import { open } from 'node:fs/promises';
import type { ReadContext, ReadOutcome, SourceReader } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';
import { contentDigest, parseUpstreamFile } from './upstream-file.ts';

/** Default bound of a source file: the official registry's whole data is a few MiB. */
export const MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024;

export function createFileReader(path: string, maxBytes = MAX_SOURCE_FILE_BYTES): SourceReader {
  return {
    async read({ previous }: ReadContext): Promise<ReadOutcome> {
      const content = await readBounded(path, maxBytes);
      const digest = contentDigest(content);
      if (previous?.digest === digest) return { type: 'unchanged' };
      const parsed = parseUpstreamFile(content);
      if (!parsed.ok) throw new SyncFailure(`${path}: ${parsed.message}`);
      return { type: 'snapshot', items: parsed.items, skipped: parsed.skipped, digest };
    },
  };
}

async function readBounded(path: string, maxBytes: number): Promise<string> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SyncFailure(code === 'ENOENT' ? `file ${path} does not exist` : `file ${path} cannot be read: ${(err as Error).message}`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new SyncFailure(`${path} is not a regular file`);
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
