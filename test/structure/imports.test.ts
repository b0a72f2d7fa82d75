/**
 * The rules of the folder map (core/README.md, Design): core/ imports nothing from plugins/, the
 * layers of core and the plugin families import downward only, and no module reaches itself
 * through its imports. Plugins and examples reach the core only through its public entry (`@gatehouse-mcp/gateway`, core/index.ts),
 * or a narrow one package.json exports beside it (`@gatehouse-mcp/gateway/address-guard`, for a
 * worker thread that must not load all of core), as a plugin outside the repository must, and no core module imports that entry (loading it must
 * not start a cycle through it). Also: every test file is where `npm test`'s glob
 * (test/<folder>/<name>.test.ts) finds it, and core and plugins import the Node globals that
 * are accessors on the global object.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { REPO_ROOT } from '../fixtures/processes.ts';

function filesUnder(dir: string, ending: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path, ending));
    else if (ending.test(name)) out.push(path);
  }
  return out;
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'|import\('([^']+)'\)/gm;

const MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string> };
/** The package's name: a module importing it by name (Node's self-reference) gets its entry, core/index.ts. */
const PACKAGE = MANIFEST.name;
const ENTRY = 'core/index.ts';
/**
 * The package's other public entries, by the name they are imported as (`exports` of
 * package.json): narrow ones, for code that must not load all of core (a worker thread's).
 */
const SUBPATH_ENTRIES = new Map<string, string>(
  Object.entries(MANIFEST.exports)
    .filter(([key, target]) => key !== '.' && target.endsWith('.ts'))
    .map(([key, target]) => [`${PACKAGE}/${key.slice(2)}`, target.slice(2)] as const),
);

/** The modules `file` imports (static and dynamic), as repository-relative paths; other packages are left out. */
function importsOf(file: string, source = readFileSync(file, 'utf8')): string[] {
  const deps: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const specifier = (m[1] ?? m[2] ?? m[3])!;
    if (specifier === PACKAGE || specifier.startsWith(`${PACKAGE}/`)) deps.push(specifier === PACKAGE ? ENTRY : specifier);
    else if (specifier.startsWith('.')) deps.push(relative(REPO_ROOT, resolve(dirname(file), specifier)));
  }
  return deps;
}

/** Module (repository-relative path) → the modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...filesUnder(join(REPO_ROOT, 'core'), /\.(ts|mjs)$/), ...filesUnder(join(REPO_ROOT, 'plugins'), /\.(ts|mjs)$/)]) {
    // A subpath entry is the core module it names (its layer, its place in a cycle).
    graph.set(relative(REPO_ROOT, file), importsOf(file).map((dep) => SUBPATH_ENTRIES.get(dep) ?? dep));
  }
  return graph;
}

/** `file -> path` for each import of a core module other than the public entries (or of a subpath of the package that is none). */
function deepCoreImports(file: string, source?: string): string[] {
  return importsOf(file, source)
    .filter((dep) => dep !== ENTRY && !SUBPATH_ENTRIES.has(dep) && (dep.startsWith('core/') || dep.startsWith(`${PACKAGE}/`)))
    .map((dep) => `${relative(REPO_ROOT, file)} -> ${dep}`);
}

/** The plugin families, lowest first: each may import the ones before it (and core), not after. */
const LAYERS = ['core/', 'plugins/cedar-authz/', 'plugins/incoming-auth/', 'plugins/auth-server/', 'plugins/outgoing-auth/', 'plugins/registry-authz/', 'plugins/registry/', 'plugins/cli/'];
const layerOf = (path: string): number => LAYERS.findIndex((prefix) => path.startsWith(prefix));

/**
 * The layers of core, lowest first (core/README.md, Layers): a core module imports modules of its
 * own layer or of lower ones, never of a higher one, so no two folders of core form a cycle.
 */
const CORE_LAYERS = [
  'core/base/', // the error catalogue, the promise helper, request budgets: imports nothing of core
  'core/observe/', // logs and metrics
  'core/http/', // HTTP on the wire: the own server, heads, bodies, CORS, an error as a response
  'core/protocol/', // JSON-RPC framing, SSE, the MCP method table and the generations' wire rules
  'core/plugin-api/', // what a plugin is and is given: the request context, replies, hooks, backends, the loader
  'core/config/', // the vMCP configuration: schemas, problems with positions, resolved types
  'core/store/', // Redis connections
  'core/upstream/', // the backend client: pools, exchanges, stream openings
  'core/server/', // the gateway server: listeners, the fixed request order, the hook chain, the app lifecycle
  'core/mcp/', // the MCP engine: endpoints, sessions, aggregation
  'core/vmcp/', // the virtual MCP server composed from its config, and reloads
  'core/index.ts', // the public entry
];
const coreLayerOf = (path: string): number => CORE_LAYERS.findIndex((prefix) => path.startsWith(prefix));

describe('the import rules', () => {
  const graph = importGraph();

  it('every module belongs to a layer of the folder map', () => {
    assert.deepEqual([...graph.keys()].filter((file) => layerOf(file) === -1), []);
  });

  it('core imports nothing from plugins, and each family imports only lower ones', () => {
    const upward: string[] = [];
    for (const [file, deps] of graph) {
      for (const dep of deps) if (layerOf(dep) > layerOf(file)) upward.push(`${file} -> ${dep}`);
    }
    assert.deepEqual(upward, []);
  });

  it('every core module is in a layer of core, and imports only its own layer or lower ones', () => {
    const core = [...graph.keys()].filter((file) => file.startsWith('core/'));
    assert.deepEqual(core.filter((file) => coreLayerOf(file) === -1), [], 'put the module in one of CORE_LAYERS');
    const upward: string[] = [];
    for (const file of core) {
      for (const dep of graph.get(file)!) {
        if (dep.startsWith('core/') && coreLayerOf(dep) > coreLayerOf(file)) upward.push(`${file} -> ${dep}`);
      }
    }
    assert.deepEqual(upward, [], 'a lower layer of core imports a higher one');
  });

  it('has no import cycle', () => {
    // Tarjan's strongly connected components: a component of more than one module is a cycle.
    let next = 0;
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const cycles: string[][] = [];
    const visit = (v: string): void => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!graph.has(w)) continue;
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== v);
        if (component.length > 1) cycles.push(component);
      }
    };
    for (const v of graph.keys()) if (!index.has(v)) visit(v);
    assert.deepEqual(cycles, []);
  });

  it('plugins and examples import the core only through its public entry (@gatehouse-mcp/gateway)', () => {
    const files = [...filesUnder(join(REPO_ROOT, 'plugins'), /\.(ts|mjs)$/), ...filesUnder(join(REPO_ROOT, 'examples'), /\.(ts|mjs)$/)];
    const deep = files.flatMap((file) => deepCoreImports(file));
    assert.deepEqual(deep, [], `import these from '${PACKAGE}' (core/index.ts), adding there what it lacks:\n${deep.join('\n')}`);
  });

  it('the rule catches every form of a deep import, and lets the entries pass (not the file behind one, by its path)', () => {
    const file = join(REPO_ROOT, 'plugins/some-plugin/hooks.ts');
    const source = [
      "import { definePlugin, z } from '@gatehouse-mcp/gateway';",
      "import type { Context } from '../../core/plugin-api/context.ts';",
      "import {\n  GatewayError,\n  untrusted,\n} from '../../core/base/errors.ts';",
      "export { Reply } from '../../core/plugin-api/reply.ts';",
      "const lazy = () => import('../../core/server/app.ts');",
      "import { Pool } from '@gatehouse-mcp/gateway/core/upstream/pool.ts';",
      "import { guardedLookup } from '@gatehouse-mcp/gateway/address-guard';",
      "import { refusedAddress } from '../../core/http/address-guard.ts';",
      "import { helper } from './helper.ts';",
      "import { z as zod } from 'zod';",
    ].join('\n');
    assert.deepEqual(deepCoreImports(file, source), [
      'plugins/some-plugin/hooks.ts -> core/plugin-api/context.ts',
      'plugins/some-plugin/hooks.ts -> core/base/errors.ts',
      'plugins/some-plugin/hooks.ts -> core/plugin-api/reply.ts',
      'plugins/some-plugin/hooks.ts -> core/server/app.ts',
      `plugins/some-plugin/hooks.ts -> ${PACKAGE}/core/upstream/pool.ts`,
      'plugins/some-plugin/hooks.ts -> core/http/address-guard.ts',
    ]);
  });

  it('the entry loads, and its bindings are the core modules\' own (one GatewayError class)', async () => {
    const entry = await import(PACKAGE);
    const errors = await import('../../core/base/errors.ts');
    const context = await import('../../core/plugin-api/context.ts');
    assert.equal(entry.GatewayError, errors.GatewayError);
    assert.equal(entry.StartupError, errors.StartupError);
    assert.equal(entry.Context, context.Context);
    assert.equal(typeof entry.then, 'undefined', 'the module namespace is not a thenable');
  });

  it('no core module imports the public entry', () => {
    const graph = importGraph();
    const through = [...graph].filter(([file, deps]) => file.startsWith('core/') && deps.includes(ENTRY)).map(([file]) => `${file} -> ${ENTRY}`);
    assert.deepEqual(through, [], 'a core module imports what it needs by path: importing the entry would load every core module through a cycle');
  });
});

describe('the test glob', () => {
  it('finds every test file: each is test/<folder>/<name>.test.ts', () => {
    const misplaced = filesUnder(join(REPO_ROOT, 'test'), /\.test\.ts$/)
      .map((file) => relative(join(REPO_ROOT, 'test'), file))
      .filter((file) => file.split('/').length !== 2);
    assert.deepEqual(misplaced, [], 'npm test runs test/*/*.test.ts: move these up, or widen the glob in package.json');
  });
});

/**
 * Node defines `performance`, `process` and `Buffer` on the global object as accessors (getters,
 * so that they can be replaced), and V8 does not fold an accessor of the global object: each use
 * is a call through the global-load inline cache and the getter, some 180 instructions, a dozen
 * times a request on the transparent path (bench/README.md). Imported, they are module bindings.
 */
const GLOBAL_ACCESSORS: Readonly<Record<string, string>> = { performance: 'node:perf_hooks', process: 'node:process', Buffer: 'node:buffer' };

/** `name` uses of a file that read a global accessor (`process.x`, `x instanceof Buffer`, `f(process)`), unless the file imports it. */
function globalAccessorUses(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const imported = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier) || statement.importClause === undefined) continue;
    const from = statement.moduleSpecifier.text;
    const clause = statement.importClause;
    if (clause.name !== undefined && GLOBAL_ACCESSORS[clause.name.text] === from) imported.add(clause.name.text);
    const bindings = clause.namedBindings;
    if (bindings !== undefined && ts.isNamedImports(bindings)) {
      for (const element of bindings.elements) if (GLOBAL_ACCESSORS[element.name.text] === from) imported.add(element.name.text);
    }
  }
  const uses: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && Object.hasOwn(GLOBAL_ACCESSORS, node.text) && !imported.has(node.text)) {
      const parent = node.parent;
      const read =
        (ts.isPropertyAccessExpression(parent) && parent.expression === node) ||
        (ts.isBinaryExpression(parent) && parent.right === node) ||
        ((ts.isCallExpression(parent) || ts.isNewExpression(parent)) && (parent.arguments as readonly ts.Node[] | undefined)?.includes(node) === true);
      if (read) uses.push(`${relative(REPO_ROOT, path)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1} ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

describe('the Node globals that are accessors', () => {
  it('core and plugins import performance, process and Buffer rather than read them off the global object', () => {
    const uses = ['core', 'plugins'].flatMap((dir) => filesUnder(join(REPO_ROOT, dir), /(?<!\.d)\.ts$/)).flatMap(globalAccessorUses);
    assert.deepEqual(uses, [], "import { performance } from 'node:perf_hooks', process from 'node:process', { Buffer } from 'node:buffer'");
  });

  it('the rule sees a read through the global, and lets an imported one pass', () => {
    const dir = join(REPO_ROOT, '.scratch-structure');
    mkdirSync(dir, { recursive: true });
    try {
      const bare = join(dir, 'bare.ts');
      writeFileSync(bare, "export const t = (x: unknown): number => (x instanceof Buffer ? performance.now() : process.pid);\n");
      assert.deepEqual(globalAccessorUses(bare).map((use) => use.split(' ')[1]), ['Buffer', 'performance', 'process']);
      const imported = join(dir, 'imported.ts');
      writeFileSync(imported, "import { Buffer } from 'node:buffer';\nimport { performance } from 'node:perf_hooks';\nimport process from 'node:process';\nexport const t = (x: unknown): number => (x instanceof Buffer ? performance.now() : process.pid);\n");
      assert.deepEqual(globalAccessorUses(imported), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
