/**
 * The size of the core's parts (core/README.md, Layers): a file of core/ holds one concept, in at
 * most FILE_LINES lines, and a function or method reads top to bottom in at most FUNCTION_LINES.
 * Past that, a file is split by what its parts are (a step, a lifecycle, a listener) and a
 * function into named steps. The few that are larger are listed with why, each at its size
 * today: they may shrink, not grow.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { REPO_ROOT } from '../tiers.ts';

const FILE_LINES = 400;
const FUNCTION_LINES = 60;

/** Files of core/ over FILE_LINES: the reason, and the most lines they may have. */
const LARGE_FILES: Readonly<Record<string, { readonly max: number; readonly why: string }>> = {
  'core/mcp/aggregate/routed.ts': {
    max: 651,
    why: 'one routed exchange (JSON answer, SSE events, parking and resuming a call): its parts share the exchange state (the reading of the answer is answer-reader.ts)',
  },
  'core/http/wire/client-connection.ts': {
    max: 419,
    why: "one client connection's state machine on the hot path (pipelining, backpressure, timeouts, refusals; the parser's callbacks are request-parsing.ts): a split would add a call per request",
  },
};

/** Functions of core/ over FUNCTION_LINES (`file:name`): the reason, and the most lines they may have. */
const LONG_FUNCTIONS: Readonly<Record<string, { readonly max: number; readonly why: string }>> = {
  'core/http/request-head.ts:constructor': { max: 64, why: 'the one pass over rawHeaders on the hot path: one loop, one switch' },
  'core/observe/metrics.ts:constructor': { max: 61, why: 'the declaration of every metric family, one statement each' },
};

function coreFiles(dir = join(REPO_ROOT, 'core')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return coreFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

interface Measured {
  readonly name: string;
  readonly lines: number;
}

/** Every function, method, constructor and function-valued expression of a file, with its length in lines. */
function functionsOf(path: string, text: string): Measured[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: Measured[] = [];
  const lineOf = (position: number): number => source.getLineAndCharacterOfPosition(position).line;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const name = ts.isConstructorDeclaration(node) ? 'constructor' : ((node as ts.FunctionLikeDeclaration).name?.getText(source) ?? `(anonymous at line ${lineOf(node.getStart(source)) + 1})`);
      found.push({ name, lines: lineOf(node.end) - lineOf(node.getStart(source)) + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the size of core', () => {
  const files = coreFiles().map((path) => ({ file: relative(REPO_ROOT, path), text: readFileSync(path, 'utf8') }));

  it(`no file of core is over ${FILE_LINES} lines, but those listed, and they do not grow`, () => {
    const over: string[] = [];
    for (const { file, text } of files) {
      const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
      const allowed = LARGE_FILES[file]?.max ?? FILE_LINES;
      if (lines > allowed) over.push(`${file}: ${lines} lines (at most ${allowed})`);
    }
    assert.deepEqual(over, [], 'split the file by what its parts are');
  });

  it(`no function of core is over ${FUNCTION_LINES} lines, but those listed, and they do not grow`, () => {
    const over: string[] = [];
    for (const { file, text } of files) {
      for (const fn of functionsOf(file, text)) {
        const allowed = LONG_FUNCTIONS[`${file}:${fn.name}`]?.max ?? FUNCTION_LINES;
        if (fn.lines > allowed) over.push(`${file}:${fn.name}: ${fn.lines} lines (at most ${allowed})`);
      }
    }
    assert.deepEqual(over, [], 'write the function as named steps');
  });

  it('every listed exception still exists', () => {
    const known = new Set(files.map((f) => f.file));
    const names = new Set(files.flatMap(({ file, text }) => functionsOf(file, text).map((fn) => `${file}:${fn.name}`)));
    const stale = [...Object.keys(LARGE_FILES).filter((file) => !known.has(file)), ...Object.keys(LONG_FUNCTIONS).filter((fn) => !names.has(fn))];
    assert.deepEqual(stale, [], 'remove these from the lists');
  });
});
