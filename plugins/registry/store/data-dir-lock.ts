/**
 * One process per embedded data directory: PGlite is PostgreSQL in this process, and two
 * processes writing one directory would corrupt it. The lock is a file next to the directory
 * holding the owner's pid; a lock whose process is gone is stale and taken over.
 */
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import process from 'node:process';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dataDir`; resolves to its release. */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockFile = `${dataDir.replace(/\/+$/, '')}.lock`;
  await mkdir(dirname(lockFile), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && alive(owner)) {
        throw new Error(`the embedded database ${dataDir} is in use by process ${owner} (lock file ${lockFile}); stop it first, or use another database.path`);
      }
      await rm(lockFile, { force: true });
    }
  }
  throw new Error(`cannot lock the embedded database ${dataDir} (lock file ${lockFile})`);
}
