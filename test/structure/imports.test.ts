/**
 * The rules of the folder map (core/README.md, Design): core/ imports nothing from plugins/, the plugin
 * families import downward only, and no module reaches itself through its imports. Also: every
 * test file is where `npm test`'s glob (test/<folder>/<name>.test.ts) finds it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
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

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*import\s+'(\.[^']+)'|import\('(\.[^']+)'\)/gm;

/** Module (repository-relative path) → the modules it imports (static, relative imports). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...filesUnder(join(REPO_ROOT, 'core'), /\.(ts|mjs)$/), ...filesUnder(join(REPO_ROOT, 'plugins'), /\.(ts|mjs)$/)]) {
    const deps: string[] = [];
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      deps.push(relative(REPO_ROOT, resolve(dirname(file), (m[1] ?? m[2] ?? m[3])!)));
    }
    graph.set(relative(REPO_ROOT, file), deps);
  }
  return graph;
}

/** The plugin families, lowest first: each may import the ones before it (and core), not after. */
const LAYERS = ['core/', 'plugins/incoming-auth/', 'plugins/auth-server/', 'plugins/outgoing-auth/', 'plugins/registry-authz/', 'plugins/registry/', 'plugins/cli/'];
const layerOf = (path: string): number => LAYERS.findIndex((prefix) => path.startsWith(prefix));

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
});

describe('the test glob', () => {
  it('finds every test file: each is test/<folder>/<name>.test.ts', () => {
    const misplaced = filesUnder(join(REPO_ROOT, 'test'), /\.test\.ts$/)
      .map((file) => relative(join(REPO_ROOT, 'test'), file))
      .filter((file) => file.split('/').length !== 2);
    assert.deepEqual(misplaced, [], 'npm test runs test/*/*.test.ts: move these up, or widen the glob in package.json');
  });
});
