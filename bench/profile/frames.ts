/**
 * What a profile's frame is, for a person: where it is in the source (`file:line`), and the
 * category its self time counts in (GC, node:http, the HTTP parser, JSON, gatehouse's core by
 * folder, plugins, ...), the split that explains a row's CPU per request.
 *
 * Lines: V8 gives the line of the code it ran. TypeScript runs through tsx, which transpiles a
 * file onto a few long lines (esbuild's minifyWhitespace), so for a `.ts` file the line is found
 * in the source by the function's name (its first declaration: `name(`, `function name`,
 * `name =`, `#name(`, `get name`); `~` when the name is not found there (or the function has none).
 */
import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IDLE, type CallFrame } from './cpuprofile.ts';

/** A file URL's path, relative to `root` when inside it, from `node_modules/` when in a package; others as given. */
export function displayPath(url: string, root: string): string {
  if (!url.startsWith('file://')) return url;
  const path = fileURLToPath(url);
  const rel = relative(root, path);
  if (!rel.startsWith('..') && !rel.startsWith(sep)) return rel.split(sep).join('/');
  const modules = path.lastIndexOf(`${sep}node_modules${sep}`);
  return modules === -1 ? path : path.slice(modules + 1).split(sep).join('/');
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The 1-based line declaring `name` in `source`, or undefined. */
export function declarationLine(source: string, name: string): number | undefined {
  const bare = name.replace(/^(get|set) /, '');
  if (!/^#?[\w$]+$/.test(bare)) return undefined;
  const n = escapeRegExp(bare);
  const forms = [
    new RegExp(`^\\s*(?:export\\s+)?(?:default\\s+)?(?:async\\s+)?function\\s*\\*?\\s*${n}\\b`),
    new RegExp(`^\\s*(?:export\\s+)?(?:abstract\\s+)?class\\s+${n}\\b`),
    new RegExp(`^\\s*(?:(?:public|private|protected|static|async|override|readonly|get|set)\\s+)*\\*?${n}\\s*[(<]`),
    new RegExp(`^\\s*(?:export\\s+)?(?:const|let|var)\\s+${n}\\s*[=:]`),
    new RegExp(`^\\s*(?:(?:public|private|protected|static|readonly)\\s+)*${n}\\s*[=:]\\s*(?:async\\s*)?(?:\\(|function|[\\w$]+\\s*=>)`),
  ];
  const lines = source.split('\n');
  for (const form of forms) {
    const i = lines.findIndex((line) => form.test(line));
    if (i !== -1) return i + 1;
  }
  return undefined;
}

/** Locates frames; TypeScript sources are read once each. */
export class FrameLocator {
  readonly #root: string;
  readonly #sources = new Map<string, string | null>();

  constructor(root: string) {
    this.#root = root;
  }

  #source(url: string): string | null {
    let text = this.#sources.get(url);
    if (text === undefined) {
      try {
        text = readFileSync(fileURLToPath(url), 'utf8');
      } catch {
        text = null;
      }
      this.#sources.set(url, text);
    }
    return text;
  }

  /** `path:line`, or the function's kind of place when it has no file (a V8 builtin, native code). */
  where(frame: CallFrame): string {
    if (frame.url === '') return frame.functionName.startsWith('(') ? '' : 'native';
    const path = displayPath(frame.url, this.#root);
    if (frame.url.startsWith('file://') && /\.[mc]?tsx?$/.test(frame.url)) {
      const source = this.#source(frame.url);
      const line = source === null || frame.functionName === '' ? undefined : declarationLine(source, frame.functionName);
      return `${path}:${line ?? '~'}`;
    }
    return `${path}:${frame.lineNumber + 1}`;
  }

  /** `functionName (path:line)`, for folded stacks and tables (no `;`, which separates frames). */
  label(frame: CallFrame): string {
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    const where = this.where(frame);
    return (where === '' ? name : `${name} (${where})`).replace(/;/g, ',');
  }
}

/** Self time of these native functions is the socket's write system calls (StreamBase). */
const SOCKET_WRITES = new Set(['writeBuffer', 'writev', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String', 'shutdown']);
const HTTP_PARSER = new Set(['execute', 'parserOnHeadersComplete', 'parserOnHeaders', 'parserOnBody', 'parserOnMessageComplete']);
const JSON_BUILTINS = new Set(['parse', 'stringify']);

/** The category of time not counted as CPU (the thread waiting in the event loop). */
export const IDLE_CATEGORY = 'idle';

/**
 * The category a frame's self time counts in (first rule that matches). `root` is the
 * repository the gateway ran from, for the core folders and plugins.
 */
export function categoryOf(frame: CallFrame, root: string): string {
  const { functionName: fn, url } = frame;
  if (fn === IDLE) return IDLE_CATEGORY;
  if (fn === '(garbage collector)') return 'GC (on the main thread)';
  if (fn === '(program)') return 'V8 and native code, no JS on the stack';
  if (url === '' && SOCKET_WRITES.has(fn)) return 'socket writes (native, the write system calls)';
  if ((url === '' && fn === 'execute') || (url === 'node:_http_common' && HTTP_PARSER.has(fn))) return 'HTTP parser (llhttp and its callbacks)';
  if (url === '' && JSON_BUILTINS.has(fn)) return 'JSON.parse / JSON.stringify';
  if (url.startsWith('node:_http_') || url === 'node:http') return 'node:http';
  if (url === 'node:net' || url.startsWith('node:internal/stream_base') || url.startsWith('node:internal/streams/') || url === 'node:stream' || url === 'node:internal/net') return 'node:net and streams';
  if (url.startsWith('node:')) return 'node internals, other (events, ticks, timers, buffers, ...)';
  if (url === '') return 'V8 builtins and native functions, other';
  const path = displayPath(url, root);
  if (path.startsWith('node_modules/http-proxy/')) return 'http-proxy (npm)';
  if (path.startsWith('node_modules/')) return 'npm packages, other';
  // The benchmarks' own servers (the backend, the floors; gatehouse bench's http-proxy server, which the load bench runs too).
  if (path.startsWith('bench/') || path.startsWith('plugins/cli/bench/')) return 'bench scripts (backends, reference and floor servers)';
  const gatehouse = /^(core|plugins)\/([^/]+)\//.exec(path);
  if (gatehouse !== null) return `${gatehouse[1]}/${gatehouse[2]}`;
  if (/^core\/[^/]+$/.test(path)) return 'core';
  return 'other';
}
