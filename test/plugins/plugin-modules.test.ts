/**
 * Where a plugin module named in a config comes from: a path, or a package name resolved from the
 * config file's directory as Node resolves an import written there (node_modules upward, the
 * package's "exports" with the import condition), never from the gateway's own install; and a
 * module that cannot be used says which and why, on one line.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { importPlugin, loadPluginModule, PluginConfigError } from '../../core/plugin-api/plugin-loader.ts';

/** A plugin definition as plain JavaScript (no import: these folders have no gateway installed). */
const plugin = (name: string) => `export default { name: ${JSON.stringify(name)}, create() { return { name: ${JSON.stringify(name)} }; } };\n`;

async function write(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
}

describe('plugin modules', () => {
  let root: string;
  /** A project: its config in config/, its packages in node_modules/ one level up. */
  let configDir: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'gatehouse-plugin-modules-'));
    configDir = join(root, 'project', 'config');
    await mkdir(configDir, { recursive: true });
    const pkg = join(root, 'project', 'node_modules', 'acme-plugin');
    // Conditional exports: the import condition wins over require, as for an `import` statement.
    await write(join(pkg, 'package.json'), JSON.stringify({ name: 'acme-plugin', version: '1.0.0', type: 'module', exports: { '.': { require: './wrong.cjs', import: './plugin.js' }, './extra': './extra.js' } }));
    await write(join(pkg, 'plugin.js'), plugin('acme'));
    await write(join(pkg, 'extra.js'), plugin('acme-extra'));
    await write(join(pkg, 'wrong.cjs'), 'module.exports = { name: "wrong", create() {} };\n');
    const scoped = join(root, 'project', 'node_modules', '@acme', 'default-only');
    await write(join(scoped, 'package.json'), JSON.stringify({ name: '@acme/default-only', version: '1.0.0', type: 'module', exports: { default: './index.js' } }));
    await write(join(scoped, 'index.js'), plugin('scoped'));
    await write(join(configDir, 'local', 'package.json'), JSON.stringify({ type: 'module' }));
    await write(join(configDir, 'local', 'plugin.ts'), `export default { name: 'local' as string, create() { return { name: 'local' }; } };\n`);
    await write(join(configDir, 'local', 'broken.ts'), `export default {\n  name: 'broken',,\n};\n`);
    await write(join(configDir, 'local', 'throws.js'), `throw new Error('no licence key');\n`);
    await write(join(configDir, 'local', 'not-a-plugin.js'), `export const answer = 42;\n`);
  });
  after(() => rm(root, { recursive: true, force: true }));

  it('a package name resolves from the config file\'s directory upward, with the import condition of its "exports"', async () => {
    const loaded = await loadPluginModule('acme-plugin', configDir);
    assert.ok(loaded.ok, JSON.stringify(loaded));
    assert.equal(loaded.definition.name, 'acme');
    const subpath = await loadPluginModule('acme-plugin/extra', configDir);
    assert.equal(subpath.ok && subpath.definition.name, 'acme-extra');
    const scoped = await loadPluginModule('@acme/default-only', configDir);
    assert.equal(scoped.ok && scoped.definition.name, 'scoped');
  });

  it('a package of the gateway\'s own install is not found from a config directory that lacks it', async () => {
    // zod is in the gateway's node_modules, not in the project's.
    const loaded = await loadPluginModule('zod', configDir);
    assert.ok(!loaded.ok);
    assert.equal(loaded.problem, `cannot load plugin module "zod": Cannot find package 'zod' imported from ${configDir}/`);
    const absent = await loadPluginModule('acme-plugin/missing', configDir);
    assert.ok(!absent.ok);
    assert.match(absent.problem, /^cannot load plugin module "acme-plugin\/missing": Package subpath '\.\/missing' is not defined by "exports" in \S+acme-plugin\/package\.json/);
  });

  it('a path loads the file (TypeScript through tsx)', async () => {
    const loaded = await loadPluginModule(join(configDir, 'local', 'plugin.ts'), '/nowhere');
    assert.equal(loaded.ok && loaded.definition.name, 'local');
  });

  it('a module that cannot be used says which and why, on one line', async () => {
    const local = join(configDir, 'local');
    const broken = await loadPluginModule(join(local, 'broken.ts'), configDir);
    assert.ok(!broken.ok);
    assert.equal(broken.problem.includes('\n'), false);
    assert.match(broken.problem, new RegExp(`^cannot load plugin module "${join(local, 'broken.ts')}": Transform failed with 1 error: \\S+broken\\.ts:2:17: ERROR: `));
    const throws = await loadPluginModule(join(local, 'throws.js'), configDir);
    assert.deepEqual(throws, { ok: false, problem: `cannot load plugin module "${join(local, 'throws.js')}": no licence key` });
    const notPlugin = await loadPluginModule(join(local, 'not-a-plugin.js'), configDir);
    assert.deepEqual(notPlugin, { ok: false, problem: `module "${join(local, 'not-a-plugin.js')}" does not export a plugin (a default export made with definePlugin)` });
  });

  it('importPlugin throws a PluginConfigError that names where the config refers to it', async () => {
    await assert.rejects(importPlugin('no-such-plugin', configDir, 'VirtualMCPServer/vmcp spec.plugins[0].config'), (err: unknown) => {
      assert.ok(err instanceof PluginConfigError);
      assert.equal(err.message.split('\n').at(-1), `VirtualMCPServer/vmcp spec.plugins[0].config: cannot load plugin module "no-such-plugin": Cannot find package 'no-such-plugin' imported from ${configDir}/`);
      return true;
    });
  });
});
