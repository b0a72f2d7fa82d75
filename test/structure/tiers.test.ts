/**
 * The split of the test suite into `npm run test:unit` and `npm run test:e2e` (test/tiers.ts):
 * each test file is in exactly one tier, every entry of the lists matches a file, and a unit
 * file needs no service as far as its source shows. Its source and the test modules it imports
 * (test/ files, followed through their imports) may not import node:child_process, ioredis or pg,
 * nor call spawnFixture. test/fixtures/processes.ts, which defines it, may import child_process:
 * its other helpers (REPO_ROOT, freePort, waitFor) start nothing. What the source cannot show is
 * checked when `test:unit` runs, by test/unit-guard.ts.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { E2E, REPO_ROOT, UNIT, entryMatches, testFiles, tierFiles } from '../tiers.ts';

const SERVICE_IMPORT = /from\s+'(node:child_process|child_process|ioredis|pg)'/;
const SPAWNS = /\bspawnFixture\s*\(/;
const DEFINES_SPAWN = 'test/fixtures/processes.ts';
const RELATIVE_IMPORT = /(?:import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'|import\('(\.[^']+)'\)/g;

/** The file and the test modules it imports, transitively (type-only imports start nothing). */
function testModules(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const match of readFileSync(join(REPO_ROOT, file), 'utf8').matchAll(RELATIVE_IMPORT)) {
    if (match[1] !== undefined) continue;
    const target = relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file), (match[2] ?? match[3])!));
    if (target.startsWith('test/') && existsSync(join(REPO_ROOT, target))) testModules(target, seen);
  }
  return seen;
}

describe('the tiers of the test suite', () => {
  const files = testFiles();

  it('puts every test file in exactly one tier', () => {
    const problems: string[] = [];
    for (const file of files) {
      const entries = [...UNIT.map((e) => `UNIT ${e}`), ...E2E.map((e) => `E2E ${e}`)].filter((e) => entryMatches(e.slice(e.indexOf(' ') + 1), file));
      if (entries.length !== 1) problems.push(`${file}: ${entries.length === 0 ? 'in no tier (add it to E2E in test/tiers.ts, or to UNIT if it meets the unit rule)' : `matched by ${entries.join(' and ')}`}`);
    }
    assert.deepEqual(problems, []);
    assert.equal(tierFiles('unit').length + tierFiles('e2e').length, files.length);
  });

  it('lists only entries that match test files', () => {
    const stale = [...UNIT, ...E2E].filter((entry) => {
      if (entry.endsWith('/') && !(existsSync(join(REPO_ROOT, entry)) && statSync(join(REPO_ROOT, entry)).isDirectory())) return true;
      return !files.some((file) => entryMatches(entry, file));
    });
    assert.deepEqual(stale, []);
  });

  it('has unit tests and e2e tests', () => {
    assert.ok(tierFiles('unit').length >= 30, `unit: ${tierFiles('unit').length} files`);
    assert.ok(tierFiles('e2e').length >= 30, `e2e: ${tierFiles('e2e').length} files`);
  });

  it('keeps unit files from starting processes or using services, as far as their source shows', () => {
    const breaches: string[] = [];
    for (const file of tierFiles('unit')) {
      for (const module of testModules(file)) {
        const source = readFileSync(join(REPO_ROOT, module), 'utf8');
        const where = module === file ? file : `${file} (through ${module})`;
        if (module !== DEFINES_SPAWN && SERVICE_IMPORT.test(source)) breaches.push(`${where} imports ${SERVICE_IMPORT.exec(source)![1]}`);
        if (module !== DEFINES_SPAWN && SPAWNS.test(source)) breaches.push(`${where} calls spawnFixture`);
      }
    }
    assert.deepEqual(breaches, [], 'move these to E2E in test/tiers.ts');
  });
});
