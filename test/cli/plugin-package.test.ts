/**
 * A plugin written outside the checkout exactly as plugins/README.md ("Writing a plugin") shows:
 * the gateway packed and installed into a project in a temporary directory, the guide's plugin
 * folder (its package.json and plugin file, read from the guide's code blocks), and the guide's
 * `spec.plugins` entry; the installed `gatehouse vmcp serve` serves it, and an MCP SDK client sees
 * the plugin act (tools/list filtered, a call to another tool refused before any backend). Once
 * with `module:` the folder's file by relative path, once with the folder packed and installed as
 * a package and `module:` its name. The installed `gatehouse vmcp validate` checks the plugin's
 * config with its schema, at the line and column of the file.
 *
 * Installing fetches the dependencies (from npm's cache when it has them): without npm, or when
 * the registry cannot be reached, the tests are skipped with the reason (and fail under CI=true).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { lexer } from 'marked';
import { connectClient } from '../fixtures/client.ts';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { serveCli } from '../helpers/cli.ts';
import { vmcpYaml } from '../helpers/gateway.ts';
import { INSTALL_FLAGS, npm, npmUnavailable, pack, skipOrFail } from '../helpers/npm.ts';

const run = promisify(execFile);
const GUIDE = join(REPO_ROOT, 'plugins/README.md');

/**
 * The files the guide writes out: a code block right after a paragraph that is only a path in
 * code and a colon ("`tool-allowlist/package.json`:"), path → the block's text.
 */
function guideFiles(markdown: string): Map<string, string> {
  const files = new Map<string, string>();
  const tokens = lexer(markdown).filter((token) => token.type !== 'space');
  tokens.forEach((token, i) => {
    const label = token.type === 'paragraph' ? /^`([\w./-]+)`:$/.exec(token.raw.trim()) : null;
    const next = tokens[i + 1];
    if (label !== null && next?.type === 'code') files.set(label[1]!, `${(next as { text: string }).text}\n`);
  });
  return files;
}

/** The guide's `spec.plugins` entries: each `- {name: tool-allowlist, ...}` line of its yaml blocks. */
function guideEntries(markdown: string): string[] {
  return lexer(markdown)
    .filter((token) => token.type === 'code' && (token as { lang?: string }).lang === 'yaml')
    .flatMap((token) => (token as { text: string }).text.split('\n'))
    .filter((line) => /^ {4}- \{name: tool-allowlist, /.test(line));
}

describe('a plugin of its own, as the guide writes it, served by the installed gateway', { timeout: 240_000 }, () => {
  let dir: string;
  let project: string;
  let unavailable: string | null = null;
  let installed: Promise<void> | null = null;
  let files: Map<string, string>;
  let entries: string[];
  let demo: SdkServer;
  let docs: SdkServer;

  before(async () => {
    const guide = await readFile(GUIDE, 'utf8');
    files = guideFiles(guide);
    entries = guideEntries(guide);
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-plugin-package-'));
    project = join(dir, 'my-gateway');
    unavailable = (await npmUnavailable(dir))?.reason ?? null;
    // The quickstart's names: demo_echo and docs_add are what the guide's allow-list lets through.
    demo = await startSdkServer({ name: 'demo', tools: ['echo', 'add'] });
    docs = await startSdkServer({ name: 'docs', tools: ['echo', 'add'] });
  });
  after(async () => {
    await demo?.close();
    await docs?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the guide shows the plugin\'s folder and both ways to name it', () => {
    assert.deepEqual([...files.keys()].sort(), ['tool-allowlist/package.json', 'tool-allowlist/tool-allowlist.ts']);
    const pkg = JSON.parse(files.get('tool-allowlist/package.json')!) as Record<string, unknown>;
    assert.equal(pkg.type, 'module');
    assert.deepEqual(pkg.peerDependencies, { '@gatehouse-mcp/gateway': '^0.1.0' });
    assert.equal(pkg.dependencies, undefined, 'the gateway is the one dependency, and a peer one');
    assert.match(files.get('tool-allowlist/tool-allowlist.ts')!, /^import \{[^}]*\bz\b[^}]*\} from '@gatehouse-mcp\/gateway';$/m);
    assert.doesNotMatch(files.get('tool-allowlist/tool-allowlist.ts')!, /from 'zod'/);
    assert.equal(entries.length, 2, entries.join('\n'));
    assert.match(entries[0]!, /module: \.\/tool-allowlist\/tool-allowlist\.ts,/);
    assert.match(entries[1]!, /module: tool-allowlist,/);
  });

  /** The project: the gateway's tarball installed, the guide's plugin folder beside the config (once). */
  function prepareProject(): Promise<void> {
    installed ??= (async () => {
      await mkdir(project, { recursive: true });
      await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'my-gateway', version: '1.0.0', private: true }, null, 2));
      const gateway = await pack(dir);
      await npm(['install', ...INSTALL_FLAGS, gateway.tarball], project);
      for (const [path, text] of files) {
        await mkdir(dirname(join(project, path)), { recursive: true });
        await writeFile(join(project, path), text);
      }
    })();
    return installed;
  }

  async function ready(t: TestContext): Promise<boolean> {
    if (unavailable !== null) {
      skipOrFail(t, unavailable);
      return false;
    }
    await prepareProject();
    return true;
  }

  /** vmcp.yaml in the project: the two quickstart servers, aggregated, and the guide's plugin entry. */
  async function writeProjectConfig(name: string, entry: string): Promise<string> {
    const file = join(project, name);
    const yaml = vmcpYaml({ backends: [{ name: 'demo', url: demo.url }, { name: 'docs', url: docs.url }], spec: `  plugins:\n${entry}` });
    await writeFile(file, yaml);
    return file;
  }

  const BIN = (): string => join(project, 'node_modules', '.bin', 'gatehouse');

  /** Served by the installed gateway, the plugin filters tools/list and refuses calls to other tools before any backend. */
  async function expectPluginActs(config: string): Promise<void> {
    const served = await serveCli('vmcp', config, [], [], { bin: BIN(), cwd: project });
    try {
      const c = await connectClient(served.url);
      try {
        const names = (await c.client.listTools()).tools.map((tool) => tool.name).sort();
        assert.deepEqual(names, ['demo_echo', 'docs_add'], 'tools/list is filtered by the plugin');
        const ok = await c.client.callTool({ name: 'demo_echo', arguments: { text: 'through the plugin' } });
        assert.match(JSON.stringify(ok.content), /through the plugin/);
        const before = demo.received.length;
        await assert.rejects(
          c.client.callTool({ name: 'demo_add', arguments: { a: 1, b: 2 } }),
          (err: unknown) => err instanceof McpError && err.code === -32602 && /tool "demo_add" is not allowed/.test(err.message),
        );
        assert.equal(demo.received.length, before, 'the refused call never reached the backend');
      } finally {
        await c.close();
      }
    } finally {
      assert.equal(await served.stop(), 0);
    }
  }

  it('module: the plugin folder\'s file, by a path relative to the config', async (t) => {
    if (!(await ready(t))) return;
    const config = await writeProjectConfig('vmcp.yaml', entries[0]!);
    const validated = await run(BIN(), ['vmcp', 'validate', '--config', config], { cwd: project });
    assert.match(validated.stdout, /vmcp\.yaml: OK \(VirtualMCPServer\/vmcp, group "tools" with 2 backends\)/);
    await expectPluginActs(config);
  });

  it('module: the package\'s name, the folder packed and installed into the project', async (t) => {
    if (!(await ready(t))) return;
    const plugin = await pack(project, join(project, 'tool-allowlist'));
    await npm(['install', ...INSTALL_FLAGS, plugin.tarball], project);
    const manifest = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    assert.deepEqual(Object.keys(manifest.dependencies).sort(), ['@gatehouse-mcp/gateway', 'tool-allowlist']);
    const installedPlugin = join(project, 'node_modules', 'tool-allowlist');
    await assert.rejects(readFile(join(installedPlugin, 'node_modules', '@gatehouse-mcp', 'gateway', 'package.json')), 'no copy of the gateway of its own: the peer dependency is the project\'s');
    const config = await writeProjectConfig('vmcp-package.yaml', entries[1]!);
    await expectPluginActs(config);
  });

  it('validate checks the plugin\'s config with its schema, at its line and column, with a did-you-mean', async (t) => {
    if (!(await ready(t))) return;
    const config = await writeProjectConfig('vmcp-typo.yaml', entries[0]!.replace('{allow: [', '{alow: ['));
    const result = await run(BIN(), ['vmcp', 'validate', '--config', config], { cwd: project }).then(
      () => assert.fail('validate accepted a misspelt plugin config'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(result.code, 2);
    const lines = (await readFile(config, 'utf8')).split('\n');
    const line = lines.findIndex((text) => text.includes('alow:')) + 1;
    const column = lines[line - 1]!.indexOf('alow:') + 1;
    assert.ok(result.stderr.includes(`${config}:${line}:${column} VirtualMCPServer/vmcp spec.plugins[0].config: unknown field "alow" (did you mean "allow"?)\n`), result.stderr);
  });
});
