/**
 * The package as npm delivers it: `npm pack` holds what the `gatehouse` bin needs (and no tests),
 * and the tarball, installed globally or into a project, runs: `--version`, and `vmcp validate`
 * of the quick-start example. In a project, `npx <package name>` finds the bin by the package's
 * name, as `npx @gatehouse-mcp/gateway ...` will once it is published (an unscoped `npx gatehouse`
 * outside a checkout is an unrelated package).
 *
 * Installing fetches the dependencies (from npm's cache when it has them): without npm, or when
 * `npm ping` cannot reach the registry, the install tests are skipped with the reason (and fail
 * under CI=true).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { INSTALL_FLAGS, npm, npmUnavailable, pack, skipOrFail, type Packed } from '../helpers/npm.ts';

const run = promisify(execFile);
const PACKAGE = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string>; exports: unknown; dependencies: Record<string, string> };
const EXAMPLE = join(REPO_ROOT, 'examples/quickstart/vmcp.yaml');

describe('the npm package', { timeout: 240_000 }, () => {
  let dir: string;
  let packed: Packed | null = null;
  let unavailable: string | null = null;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-package-'));
    const npmState = await npmUnavailable(dir);
    unavailable = npmState?.reason ?? null;
    if (npmState?.npmMissing === true) return;
    packed = await pack(dir);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Installs with npm; skips the test (fails under CI) when the registry cannot be reached. */
  async function install(t: TestContext, args: string[], cwd: string): Promise<boolean> {
    if (unavailable !== null) {
      skipOrFail(t, unavailable);
      return false;
    }
    await npm(['install', ...INSTALL_FLAGS, ...args], cwd);
    return true;
  }

  it('is named so that npx cannot pick up another package, and packs what the bin needs', (t) => {
    if (packed === null) return skipOrFail(t, unavailable!);
    assert.equal(PACKAGE.name, '@gatehouse-mcp/gateway');
    assert.deepEqual(PACKAGE.bin, { gatehouse: 'plugins/cli/bin.mjs' });
    assert.deepEqual(
      PACKAGE.exports,
      { '.': './core/index.ts', './address-guard': './core/http/address-guard.ts', './package.json': './package.json' },
      'the public entry, the one narrow entry for a worker thread (the address guard), and nothing deeper',
    );
    assert.ok(PACKAGE.dependencies.tsx !== undefined, 'tsx runs the TypeScript sources at run time: a dependency, not a dev one');
    for (const file of ['package.json', 'LICENSE', 'README.md', 'core/index.ts', 'plugins/cli/bin.mjs', 'plugins/cli/main.ts', 'core/vmcp/virtual-mcp-server.ts', 'plugins/incoming-auth/issuer-http-worker-entry.mjs', 'plugins/incoming-auth/issuer-http-worker.ts', 'plugins/registry/registry-server.ts', 'plugins/registry/model/official/server.schema.json']) {
      assert.ok(packed.files.includes(file), `${file} is in the tarball`);
    }
    assert.deepEqual(packed.files.filter((f) => /^(test|bench|examples|\.ci)\//.test(f)), [], 'no tests, benchmarks or examples');
  });

  it('installed globally (npm install -g), `gatehouse` runs', async (t) => {
    const prefix = join(dir, 'global');
    if (!(await install(t, ['--global', '--prefix', prefix, packed!.tarball], dir))) return;
    const bin = join(prefix, 'bin', 'gatehouse');
    assert.equal((await run(bin, ['--version'])).stdout, `${PACKAGE.version}\n`);
    const validated = await run(bin, ['vmcp', 'validate', '--config', EXAMPLE]);
    assert.match(validated.stdout, /: OK \(VirtualMCPServer\/quickstart, group "quickstart" with 3 backends\)/);
    assert.match((await run(bin, ['vmcp', 'serve', '--help'])).stdout, /^Usage: gatehouse vmcp serve/);
  });

  it('installed into a project, npx runs it by the package name', async (t) => {
    const project = join(dir, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'uses-gatehouse', version: '1.0.0', private: true }));
    if (!(await install(t, [packed!.tarball], project))) return;
    const npx = (args: string[]) => run('npx', ['--no-install', PACKAGE.name, ...args], { cwd: project });
    assert.equal((await npx(['--version'])).stdout, `${PACKAGE.version}\n`);
    assert.match((await npx(['vmcp', 'validate', '--config', EXAMPLE])).stdout, /: OK \(VirtualMCPServer\/quickstart/);
    assert.equal((await run(join(project, 'node_modules/.bin/gatehouse'), ['--version'])).stdout, `${PACKAGE.version}\n`);
  });
});
