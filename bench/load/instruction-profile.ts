/**
 * Where a row's counted instructions go, by function: the instruction counterpart of
 * bench:profile's CPU profiles, written by `--load-instructions-only` next to them as
 * `results/profiles/<row>.instructions.md`.
 *
 * Callgrind names what has a symbol (V8's builtins and runtime, node's C++, llhttp, libc); code
 * V8 compiled at run time it names by address only. Node run with `--perf-basic-prof` writes
 * `/tmp/perf-<pid>.map`, a line per code object it creates (`start size name`, in the order
 * created), and that names the addresses. Code space is reused once the GC frees code, so an
 * address is named by the last line that covers it.
 *
 * The callgrind format, as far as read here (valgrind's docs, "Callgrind Format
 * Specification"): `fn=(id) name` starts a function's lines (later `fn=(id)` alone), a cost
 * line is `<position> <instructions>`, and the cost line after `calls=` is a call's inclusive
 * cost, which belongs to the callee, not to the function itself.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** What a function is, for the totals by kind. */
export type CodeKind = 'gatehouse' | 'dependency' | 'node (JS)' | 'regular expression' | 'V8 builtin' | 'optimising compiler' | 'GC' | 'V8 runtime' | 'node (C++)' | 'llhttp' | 'libc' | 'other';

export interface FunctionCost {
  readonly name: string;
  readonly kind: CodeKind;
  /** Instructions of the function itself (not of what it calls), per request. */
  readonly perRequest: number;
}

export interface InstructionProfile {
  readonly perRequest: number;
  readonly byKind: Readonly<Record<CodeKind, number>>;
  /** Every function, most instructions first. */
  readonly functions: readonly FunctionCost[];
}

/** A perf map's lines in the order written: each address is named by the last one covering it. */
class PerfMap {
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];
  readonly #names: string[] = [];

  constructor(text: string) {
    for (const line of text.split('\n')) {
      const first = line.indexOf(' ');
      const second = line.indexOf(' ', first + 1);
      if (first === -1 || second === -1) continue;
      const start = parseInt(line.slice(0, first), 16);
      this.#starts.push(start);
      this.#ends.push(start + parseInt(line.slice(first + 1, second), 16));
      this.#names.push(line.slice(second + 1));
    }
  }

  nameOf(address: number): string | undefined {
    for (let i = this.#starts.length - 1; i >= 0; i--) {
      if (this.#starts[i]! <= address && address < this.#ends[i]!) return this.#names[i];
    }
    return undefined;
  }
}

/** V8's tier marks in a perf map name: `*` optimised (TurboFan), `^` baseline (Sparkplug), `~` the interpreter. */
const TIERS: Readonly<Record<string, string>> = { '^': ' (baseline code)', '~': ' (interpreted)' };

/**
 * `JS:*send file:///…/core/upstream/pool.ts:1:1065` → `send core/upstream/pool.ts` (the
 * transpiled position dropped); code not yet optimised says so, since a hot function that runs
 * there is a finding of its own.
 */
function jsName(mapped: string, root: string): string {
  const tier = TIERS[/^(?:JS|LazyCompile|Function):([*~^])/.exec(mapped)?.[1] ?? ''] ?? '';
  const text = mapped.replace(/^(JS|LazyCompile|Function):[*~^+-]?/, '').replace(`file://${root}/`, '').replace(`${root}/`, '');
  const m = /^(.*?) ?((?:node:|[\w@.-]+\/)\S*?)(?::\d+:\d+)?$/.exec(text);
  if (m === null) return text + tier;
  return `${m[1] === '' ? '(anonymous)' : m[1]} ${m[2]}${tier}`;
}

export function kindOf(name: string): CodeKind {
  if (/ (core|plugins)\//.test(name)) return 'gatehouse';
  if (/ node_modules\//.test(name)) return 'dependency';
  if (/ node:/.test(name)) return 'node (JS)';
  if (name.startsWith('RegExp:')) return 'regular expression';
  if (/compiler::|Compiler::|turboshaft|maglev|Compile(Lazy|Optimized|Baseline)|baseline::/.test(name)) return 'optimising compiler';
  if (/Heap::|Scaveng|MarkCompact|Sweeper|Evacuat|GCTracer|MemoryAllocator|ConcurrentMarking/.test(name)) return 'GC';
  if (name.startsWith('Builtins_')) return 'V8 builtin';
  if (name.includes('v8::') || name.startsWith('v8_')) return 'V8 runtime';
  if (name.includes('llhttp')) return 'llhttp';
  if (name.includes('node::') || name.startsWith('uv_') || name.startsWith('uv__')) return 'node (C++)';
  if (/^(__mem|__str|_int_|malloc|free|unlink_chunk|cfree|mem|str)/.test(name)) return 'libc';
  return 'other';
}

/**
 * Callgrind's name compression, per file: a name is written `(id) name` the first time and
 * `(id)` after. The function returned reads a reference and gives the name, remembering it.
 */
function compressedNames(): (ref: string) => string {
  const names = new Map<string, string>();
  return (ref) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(ref.trim());
    if (m === null) return ref.trim();
    if (m[2] !== undefined) names.set(m[1]!, m[2]);
    return names.get(m[1]!) ?? m[1]!;
  };
}

/** Self instructions per function name of one callgrind file (symbolised JIT addresses included). */
function selfCosts(text: string, map: PerfMap | null, root: string, into: Map<string, number>): void {
  const named = compressedNames();
  let fn = '';
  let skipNext = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      const raw = named(line.slice(3));
      const address = /^0x([0-9a-f]+)$/.exec(raw);
      const mapped = address === null || map === null ? undefined : map.nameOf(parseInt(address[1]!, 16));
      fn = mapped === undefined ? raw : jsName(mapped, root);
      continue;
    }
    if (line.startsWith('cfn=') || line.startsWith('cfi=') || line.startsWith('cfl=')) {
      if (line.startsWith('cfn=')) named(line.slice(4));
      continue;
    }
    if (line.startsWith('calls=')) {
      skipNext = true;
      continue;
    }
    const c = line.charCodeAt(0);
    // A cost line starts with a position: a number, `+n`/`-n` (relative) or `*` (the same).
    if (!((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42)) continue;
    if (skipNext) {
      skipNext = false;
      continue;
    }
    const space = line.lastIndexOf(' ');
    const cost = Number(line.slice(space + 1));
    if (space > 0 && Number.isFinite(cost)) into.set(fn, (into.get(fn) ?? 0) + cost);
  }
}

/** The entry of V8's garbage collector: every scavenge and mark-compact runs inside a call to it. */
const COLLECTOR_ENTRY = 'v8::internal::Heap::CollectGarbage(';

/** The garbage collections of one callgrind dump: how many, and their instructions. */
export interface Collections {
  readonly count: number;
  readonly instructions: number;
}

/**
 * The garbage collections of one callgrind dump: its calls into Heap::CollectGarbage and their
 * inclusive cost (the collection, and what it frees: the backing stores of the Buffers the
 * sockets read into are returned to malloc there). A scavenge of a gateway comes every thousand
 * requests or so and costs some 4 million instructions: a window of 1,000 requests holds one or
 * none, and reads 4,000 a request (~3 %) apart for that alone.
 */
export function collections(text: string): Collections {
  const named = compressedNames();
  let caller = '';
  let callee = '';
  let inCall = false;
  let calls = 0;
  let count = 0;
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      caller = named(line.slice(3));
    } else if (line.startsWith('cfn=')) {
      callee = named(line.slice(4));
    } else if (line.startsWith('calls=')) {
      inCall = true;
      calls = parseInt(line.slice(6), 10);
    } else if (inCall) {
      inCall = false;
      // A collection the collector itself started would be counted twice.
      if (callee.startsWith(COLLECTOR_ENTRY) && !caller.startsWith(COLLECTOR_ENTRY)) {
        const cost = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (Number.isFinite(cost)) total += cost;
        if (Number.isFinite(calls)) count += calls;
      }
    }
  }
  return { count, instructions: total };
}

/**
 * The profile of the dumps in `dir` named `trigger` (one window of the row, of `requests`), per
 * request; JIT code named by `perf-<pid>.map` in `dir`, else `/tmp`.
 */
export function instructionProfile(dir: string, trigger: string, requests: number, root: string): InstructionProfile {
  const costs = new Map<string, number>();
  const maps = new Map<string, PerfMap | null>();
  for (const file of readdirSync(dir)) {
    const pid = /^cg\.(\d+)\.\d+$/.exec(file)?.[1];
    if (pid === undefined) continue;
    const text = readFileSync(join(dir, file), 'utf8');
    if (!text.includes(`\ndesc: Trigger: dump ${trigger}\n`)) continue;
    if (!maps.has(pid)) {
      const path = [join(dir, `perf-${pid}.map`), `/tmp/perf-${pid}.map`].find((p) => existsSync(p));
      maps.set(pid, path === undefined ? null : new PerfMap(readFileSync(path, 'utf8')));
    }
    selfCosts(text, maps.get(pid)!, root, costs);
  }
  const byKind = Object.fromEntries((['gatehouse', 'dependency', 'node (JS)', 'regular expression', 'V8 builtin', 'optimising compiler', 'GC', 'V8 runtime', 'node (C++)', 'llhttp', 'libc', 'other'] as const).map((k) => [k, 0])) as Record<CodeKind, number>;
  const functions: FunctionCost[] = [];
  let total = 0;
  for (const [name, cost] of costs) {
    const kind = kindOf(name);
    byKind[kind] += cost / requests;
    total += cost;
    functions.push({ name, kind, perRequest: cost / requests });
  }
  functions.sort((a, b) => b.perRequest - a.perRequest);
  return { perRequest: total / requests, byKind, functions };
}

/** The profile as Markdown: the totals by kind, then the `top` functions. */
export function instructionProfileMarkdown(rowName: string, profile: InstructionProfile, top = 40): string {
  const n = (v: number): string => Math.round(v).toLocaleString('en-US');
  const pct = (v: number): string => `${((100 * v) / profile.perRequest).toFixed(1)} %`;
  const lines = [
    `# ${rowName}: where its instructions go`,
    '',
    'Generated by `npm run bench -- --load-instructions-only` (bench/load/instruction-profile.ts): run it again rather than edit this file.',
    '',
    `${n(profile.perRequest)} user-space instructions a request, in the row's least window (the figure of \`load-instructions.md\`). A function's own instructions, not what it calls; JIT-compiled JavaScript named from node's perf map (\`name file\`; TypeScript files by their path).`,
    '',
    '| kind | instructions/request | share |',
    '|---|---:|---:|',
    ...Object.entries(profile.byKind)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([kind, v]) => `| ${kind} | ${n(v)} | ${pct(v)} |`),
    '',
    `| instructions/request | share | kind | function |`,
    '|---:|---:|---|---|',
    ...profile.functions.slice(0, top).map((f) => `| ${n(f.perRequest)} | ${pct(f.perRequest)} | ${f.kind} | \`${f.name.replace(/\|/g, '\\|').slice(0, 160)}\` |`),
  ];
  return `${lines.join('\n')}\n`;
}
