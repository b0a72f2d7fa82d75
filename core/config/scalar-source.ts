/**
 * Where each character of a YAML string value is in the file: a problem found inside a value (a
 * Cedar policy's syntax error at line 2, column 7 of the policy) is reported at the line and
 * column of the file where the user wrote that character, whether the value is a block scalar
 * (`|`, `>`, with chomping and indentation indicators), a quoted one (escapes, folded lines) or a
 * plain one. JSON strings are YAML double-quoted scalars, so a JSON file maps the same way.
 *
 * The scanners follow YAML 1.2's rules for each style; the value they rebuild is compared with
 * the one the parser produced, and when the two differ (a form the scanners do not model) there
 * is no map and the caller points at the scalar instead. So a wrong position is never reported.
 */

/** The styles of the `yaml` package's scalars (`Scalar.type`). */
export type ScalarStyle = 'PLAIN' | 'QUOTE_DOUBLE' | 'QUOTE_SINGLE' | 'BLOCK_LITERAL' | 'BLOCK_FOLDED';

/** The value's characters (UTF-16 code units) and, for each, its offset in the source. */
interface Mapped {
  value: string;
  offsets: number[];
}

const isBreak = (c: string | undefined): boolean => c === '\n' || c === '\r';
const isBlank = (c: string | undefined): boolean => c === ' ' || c === '\t';

/** Length of the line break at `i` (`\r\n` is one), 0 when there is none. */
const breakLength = (src: string, i: number): number => (src[i] === '\r' && src[i + 1] === '\n' ? 2 : isBreak(src[i]) ? 1 : 0);

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '0': '\0', a: '\x07', b: '\b', t: '\t', '\t': '\t', n: '\n', v: '\v', f: '\f', r: '\r', e: '\x1b',
  ' ': ' ', '"': '"', '/': '/', '\\': '\\', N: '\x85', _: '\xa0', L: '\u2028', P: '\u2029',
};
const HEX_ESCAPES: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** The escape at `src[i]` (a backslash): what it stands for ('' for an escaped line break) and where the source goes on; null for an unknown one. */
function readEscape(src: string, i: number, end: number): { text: string; next: number } | null {
  const next = src[i + 1];
  const escapedBreak = breakLength(src, i + 1);
  if (escapedBreak > 0) {
    // An escaped line break: the break and the next line's leading blanks are not in the value.
    let j = i + 1 + escapedBreak;
    while (j < end && isBlank(src[j])) j++;
    return { text: '', next: j };
  }
  if (next !== undefined && SIMPLE_ESCAPES[next] !== undefined) return { text: SIMPLE_ESCAPES[next], next: i + 2 };
  if (next === undefined || HEX_ESCAPES[next] === undefined) return null;
  const digits = src.slice(i + 2, i + 2 + HEX_ESCAPES[next]);
  if (digits.length !== HEX_ESCAPES[next] || !/^[0-9a-fA-F]+$/.test(digits)) return null;
  const code = Number.parseInt(digits, 16);
  return code > 0x10ffff ? null : { text: String.fromCodePoint(code), next: i + 2 + digits.length };
}

/**
 * A flow scalar's content (between the quotes, or a plain scalar) as YAML folds it: a single
 * line break between text is a space, n+1 breaks are n newlines, the blanks around a break are
 * dropped; escapes in a double-quoted scalar; `''` in a single-quoted one.
 */
function scanFlow(src: string, start: number, end: number, style: 'plain' | 'single' | 'double'): Mapped | null {
  const out: Mapped = { value: '', offsets: [] };
  const emit = (text: string, at: number): void => {
    out.value += text;
    for (let k = 0; k < text.length; k++) out.offsets.push(at);
  };
  let blanks: number[] = [];
  const flush = (): void => {
    for (const at of blanks) emit(src[at]!, at);
    blanks = [];
  };
  let i = start;
  while (i < end) {
    const c = src[i]!;
    const brk = breakLength(src, i);
    if (brk > 0) {
      blanks = []; // blanks before a break are not part of the value
      const breaks: number[] = [i];
      let j = i + brk;
      for (;;) {
        while (j < end && isBlank(src[j])) j++;
        const next = breakLength(src, j);
        if (next === 0 || j >= end) break;
        breaks.push(j);
        j += next;
      }
      if (breaks.length === 1) emit(' ', i);
      else for (const at of breaks.slice(1)) emit('\n', at);
      i = j;
    } else if (isBlank(c)) {
      blanks.push(i++);
    } else if (style === 'double' && c === '\\') {
      flush();
      const escape = readEscape(src, i, end);
      if (escape === null) return null;
      if (escape.text !== '') emit(escape.text, i);
      i = escape.next;
    } else if (style === 'single' && c === "'" && src[i + 1] === "'") {
      flush();
      emit("'", i);
      i += 2;
    } else {
      flush();
      emit(c, i);
      i++;
    }
  }
  flush();
  return out;
}

/** A block scalar's header: `|` or `>`, then chomping (`-`, `+`) and an indentation digit in either order. */
function blockHeader(src: string, start: number): { chomp: 'strip' | 'clip' | 'keep'; contentStart: number } | null {
  let i = start + 1;
  let chomp: 'strip' | 'clip' | 'keep' = 'clip';
  while (i < src.length && /[-+1-9]/.test(src[i]!)) {
    if (src[i] === '-') chomp = 'strip';
    else if (src[i] === '+') chomp = 'keep';
    i++;
  }
  while (i < src.length && !isBreak(src[i])) i++; // blanks and a comment
  const brk = breakLength(src, i);
  return brk === 0 ? null : { chomp, contentStart: i + brk };
}

/** The lines of a block scalar's content: each line's start, its text (without the break) and where its break is. */
function contentLines(src: string, start: number, end: number): { start: number; text: string; breakAt: number }[] {
  const lines: { start: number; text: string; breakAt: number }[] = [];
  let i = start;
  while (i < end) {
    let j = i;
    while (j < end && !isBreak(src[j])) j++;
    lines.push({ start: i, text: src.slice(i, j), breakAt: j });
    i = j + Math.max(1, breakLength(src, j));
  }
  return lines;
}

/** Applies a block scalar's chomping to its trailing newlines. */
function chomp(mapped: Mapped, mode: 'strip' | 'clip' | 'keep'): Mapped {
  if (mode === 'keep') return mapped;
  let end = mapped.value.length;
  while (end > 0 && mapped.value[end - 1] === '\n') end--;
  if (mode === 'clip' && end < mapped.value.length && end > 0) end++;
  return { value: mapped.value.slice(0, end), offsets: mapped.offsets.slice(0, end) };
}

/** A block scalar's value with content indentation `indent`, literal (`|`) or folded (`>`). */
function scanBlock(lines: ReturnType<typeof contentLines>, indent: number, folded: boolean): Mapped {
  const out: Mapped = { value: '', offsets: [] };
  const emit = (text: string, at: number): void => {
    out.value += text;
    for (let k = 0; k < text.length; k++) out.offsets.push(at);
  };
  /** Breaks not yet written: the last text line's, then one per empty line. */
  let pending: number[] = [];
  let previousNormal = false;
  let seenText = false;
  for (const line of lines) {
    // An empty line: spaces up to the indentation at most (more spaces are text of the line).
    if (/^ *$/.test(line.text) && line.text.length <= indent) {
      pending.push(line.breakAt);
      continue;
    }
    const content = line.text.slice(indent);
    const normal = !isBlank(content[0]);
    if (seenText) {
      const [first, ...rest] = pending;
      if (folded && previousNormal && normal) {
        // Folding: one break between two text lines is a space; with empty lines between, each is a newline.
        if (rest.length === 0) emit(' ', first!);
        else for (const at of rest) emit('\n', at);
      } else for (const at of pending) emit('\n', at);
    } else for (const at of pending) emit('\n', at); // leading empty lines
    pending = [line.breakAt];
    for (let k = 0; k < content.length; k++) emit(content[k]!, line.start + indent + k);
    previousNormal = normal;
    seenText = true;
  }
  for (const at of pending) emit('\n', at);
  return out;
}

/**
 * For each UTF-16 code unit of `value`, the offset in `src` of the character it comes from (an
 * escape's first character, a folded break's position), plus one entry for the end of the value;
 * null when the scalar's source does not rebuild `value`.
 *
 * `range` is the node's range in `src` as the `yaml` package gives it: its start (the opening
 * quote, the block header) and the end of its value.
 */
export function scalarSourceOffsets(src: string, style: ScalarStyle, range: readonly [number, number], value: string): number[] | null {
  const [start, end] = range;
  let mapped: Mapped | null = null;
  if (style === 'PLAIN') mapped = scanFlow(src, start, end, 'plain');
  else if (style === 'QUOTE_DOUBLE' || style === 'QUOTE_SINGLE') {
    if (end - start < 2) return null;
    mapped = scanFlow(src, start + 1, end - 1, style === 'QUOTE_DOUBLE' ? 'double' : 'single');
  } else {
    const header = blockHeader(src, start);
    if (header === null) return value === '' ? [start] : null;
    const lines = contentLines(src, header.contentStart, end);
    const first = lines.find((line) => line.text.trim() !== '');
    const leading = first === undefined ? 0 : first.text.length - first.text.trimStart().length;
    // The content's indentation is the first text line's, unless an indicator says less: the one
    // that rebuilds the value is it.
    for (let indent = leading; indent >= 0 && mapped === null; indent--) {
      const candidate = chomp(scanBlock(lines, indent, style === 'BLOCK_FOLDED'), header.chomp);
      if (candidate.value === value) mapped = candidate;
    }
  }
  if (mapped === null || mapped.value !== value) return null;
  const last = mapped.offsets[mapped.offsets.length - 1];
  return [...mapped.offsets, last === undefined ? start : last + 1];
}
