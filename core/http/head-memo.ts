/**
 * One writer's memory of the head it wrote last, so that the next head is not built line by
 * line again where it is the same.
 *
 * A head is built by string concatenation, three joins a header line. V8 makes each join a rope
 * (a cons string) and the write into the socket's buffer walks the rope: with the joins that
 * was 6 % of a transparent request's instructions under callgrind, in each of its two heads.
 * Yet consecutive heads of one writer are mostly the same lines: the client's content type,
 * accept, protocol version and session id toward a backend; a backend's content type, length
 * and date toward the client. Only one line or two differ (the request id).
 *
 * So the writer keeps, by line, the key it rendered the line from (a start line's parts, a
 * header's name and value) and, at the line where the last head began to differ from the one
 * before, the text of every line before it, flattened into one string. The next head whose
 * lines are the same up to there starts from that text and joins only the lines after it. The
 * text is kept where heads were seen to differ, not at every line: one flattening a change of
 * the varying line's position, none per request.
 *
 * A key is compared with `===`: a string by its content, a number by value. Text kept from a
 * key passed the writer's checks when it was made, so a line that matches needs none again
 * (writable-fields.ts). With the text the writer keeps a small number of its own (`flags`:
 * what the lines declared, a length or a date), for a head continued from it.
 *
 * Lines past `LINES` are built as before and never kept. The keys hold references to what was
 * written last (a session id, a bearer token toward a backend) until other text takes their
 * line: in process memory only, like the caches that hold the same values, never logged.
 */

/** The lines of a head a memory covers (a start line and 23 header lines). */
const LINES = 24;

/** Added to, so that V8 does not drop a `Number()` whose point is its side effect. */
let flattenSink = 0;

/**
 * `text` with its rope flattened in place: V8 turns a cons string into one flat string when
 * `Number()` reads it, and the string object then points at that (later joins onto it copy
 * its bytes in one run instead of walking the rope again).
 */
function flattened(text: string): string {
  flattenSink += Number(text);
  return text;
}

/** Whether `value` is held as a key: what `===` compares by content. */
function isKey(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number';
}

export class HeadMemo {
  /** Two keys a line: the line's parts as last written (line 0: the start line's). */
  readonly #keys: (string | number)[] = new Array<string | number>(LINES * 2).fill('');
  /** `#texts[p]`: the text of lines 0..p-1 of the keys held, when kept (`undefined`: not kept). */
  readonly #texts: (string | undefined)[] = new Array<string | undefined>(LINES + 1).fill(undefined);
  readonly #flags: number[] = new Array<number>(LINES + 1).fill(0);
  /** How many lines' keys are held. */
  #lines = 0;
  /** The first line of the head last matched that differs from the one held (or its line count). */
  #differs = 0;
  #generation = 0;

  constructor() {
    this.#texts[0] = '';
  }

  /**
   * Compares a head (its start line's two parts, then `fields`: name, value, ...) with the one
   * held; returns the line to build on from: `textAt()` and `flagsAt()` of it are what the lines
   * before it came to. The caller then reads `differs` (the first line that differs from the
   * head held: its line count when it is the same) and `generation`, calls `keep()` once its
   * text reaches `differs`, and `remember()` at the end.
   */
  match(start0: string | number, start1: string | number, fields: readonly (string | number)[]): number {
    const keys = this.#keys;
    let line = 0;
    const held = this.#lines;
    if (held > 0 && keys[0] === start0 && keys[1] === start1) {
      line = 1;
      const end = fields.length - 1;
      while (line < held && 2 * line - 1 <= end && fields[2 * line - 2] === keys[2 * line] && fields[2 * line - 1] === keys[2 * line + 1]) line++;
    }
    this.#differs = line;
    this.#generation++;
    const texts = this.#texts;
    while (texts[line] === undefined) line--;
    return line;
  }

  /** The first line of the head last matched that differs from the head held. */
  get differs(): number {
    return this.#differs;
  }

  /**
   * Counts the matches: a head whose build wrote another one meanwhile (a header value's
   * `toString` may run any code) finds it changed, and keeps nothing of its own.
   */
  get generation(): number {
    return this.#generation;
  }

  textAt(line: number): string {
    return this.#texts[line]!;
  }

  flagsAt(line: number): number {
    return this.#flags[line]!;
  }

  /** The text (and flags) of the lines before `line`, the `differs` of the match `generation`: kept flattened, and returned to build on. */
  keep(generation: number, line: number, text: string, flags: number): string {
    if (generation !== this.#generation || line > LINES || this.#texts[line] !== undefined) return text;
    this.#texts[line] = flattened(text);
    this.#flags[line] = flags;
    return text;
  }

  /**
   * The head of the match `generation` is built: its keys from `from` (that match's `differs`)
   * on are held in place of the last's, and the texts kept past that line, which were the last
   * head's, are dropped. Only strings and numbers are held, which `===` compares by content: a
   * line holding anything else (an array, an object with a `toString`, whose text may change
   * while it stays the same object) ends what is held, and is built afresh and checked every time.
   */
  remember(generation: number, from: number, start0: string | number, start1: string | number, fields: readonly (string | number)[]): void {
    if (generation !== this.#generation) return;
    const keys = this.#keys;
    const texts = this.#texts;
    for (let p = from + 1; p <= this.#lines; p++) texts[p] = undefined;
    let lines = Math.min(1 + (fields.length >> 1), LINES);
    if (from === 0) {
      if (!isKey(start0) || !isKey(start1)) lines = 0;
      keys[0] = start0;
      keys[1] = start1;
    }
    for (let line = from === 0 ? 1 : from; line < lines; line++) {
      const name = fields[2 * line - 2]!;
      const value = fields[2 * line - 1]!;
      if (!isKey(name) || !isKey(value)) {
        lines = line;
        break;
      }
      keys[2 * line] = name;
      keys[2 * line + 1] = value;
    }
    // Texts kept at a line past what is held now (a match stops at the lines held, so none is
    // reached, but none is left to mislead either).
    for (let p = lines + 1; p <= from; p++) texts[p] = undefined;
    this.#lines = lines;
  }
}

