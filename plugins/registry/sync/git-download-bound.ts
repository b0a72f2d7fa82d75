/**
 * A bound on what a git fetch writes to disk. git has no limit of its own on the size of a pack
 * a remote sends, so a hostile or mistaken remote could fill the disk within the time bound; the
 * git source watches the size of its temporary repository while git fetches and stops git once
 * it passes the bound.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const CHECK_EVERY_MS = 100;

/** Bytes of the files under `dir` (files that vanish while counted are skipped). */
export async function directoryBytes(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir, { recursive: true });
  } catch {
    return 0;
  }
  let total = 0;
  for (const name of names) {
    try {
      const stats = await lstat(join(dir, name));
      if (stats.isFile()) total += stats.size;
    } catch {
      // Renamed or removed by git meanwhile (temporary packs are).
    }
  }
  return total;
}

/** Calls `exceeded` once when the files under `dir` pass `maxBytes`; returns the function that stops watching. */
export function watchDirectorySize(dir: string, maxBytes: number, exceeded: (bytes: number) => void): () => void {
  let checking = false;
  let done = false;
  const timer = setInterval(() => {
    if (checking || done) return;
    checking = true;
    void directoryBytes(dir).then((bytes) => {
      checking = false;
      if (!done && bytes > maxBytes) {
        done = true;
        clearInterval(timer);
        exceeded(bytes);
      }
    });
  }, CHECK_EVERY_MS);
  timer.unref();
  return () => {
    done = true;
    clearInterval(timer);
  };
}
