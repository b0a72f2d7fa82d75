/**
 * Matching concrete URIs against a backend's RFC 6570 resource templates (levels 1–3), to route
 * `resources/read` to the backend whose template describes the URI.
 *
 * Templates come from backends, and URIs from clients: a backtracking regular expression built
 * from a template (`(.+)` per `{+x}`) takes polynomial time on a hostile pair (three `{+x}` and a
 * few thousand characters blocked the event loop for seconds). This matcher compiles a template
 * once into a small automaton and runs it over the URI keeping the SET of states it may be in
 * (Thompson's construction): time is at most URI length × template length, whatever the input.
 *
 * What each expression matches (one or more characters of its class, after its prefix):
 *   {var}  no "/", "?" or "#"      {+var}  anything          {#var}  "#" then anything
 *   {.var} "." then no "/?#"       {/var}  "/" then no "?#"   {;var}  ";" then no "/?#"
 *   {?var} "?" then no "#"         {&var}  "&" then no "#"
 * Expressions with a prefix may also expand to nothing (an undefined variable). The matcher is
 * deliberately lenient about what a value holds: it only has to tell templates apart.
 *
 * One lookup tries every template of a session: its callers share one `MatchBudget` across them,
 * so a backend listing many long templates cannot make a lookup cost more than the budget.
 */

/** Longest template compiled (a longer one matches nothing). */
export const MAX_TEMPLATE_LENGTH = 1024;
/** Longest URI matched against templates (a longer one is routed only by an exact resource URI). */
export const MAX_URI_LENGTH = 4096;

/** States one lookup may visit across all the templates it tries (a few milliseconds at most). */
export const LOOKUP_WORK = 250_000;

/** What is left of a lookup's work; `matches` stops (no match) once it is spent. */
export interface MatchBudget {
  remaining: number;
}

type CharTest = (code: number) => boolean;

interface State {
  /** Transitions on one character. */
  readonly edges: { readonly test: CharTest; readonly to: number }[];
  /** Transitions on no character. */
  readonly empty: number[];
}

const SLASH = 47;
const QUESTION = 63;
const HASH = 35;
const DOT = 46;

const ANY: CharTest = () => true;
const NO_SLASH_QUERY_FRAGMENT: CharTest = (c) => c !== SLASH && c !== QUESTION && c !== HASH;
const NO_QUERY_FRAGMENT: CharTest = (c) => c !== QUESTION && c !== HASH;
const NO_FRAGMENT: CharTest = (c) => c !== HASH;
const NO_DOT_SLASH_QUERY_FRAGMENT: CharTest = (c) => c !== DOT && c !== SLASH && c !== QUESTION && c !== HASH;

/** Operator → its prefix ('' for none) and the class of its value's characters. */
const OPERATORS: Readonly<Record<string, { prefix: string; value: CharTest }>> = {
  '': { prefix: '', value: NO_SLASH_QUERY_FRAGMENT },
  '+': { prefix: '', value: ANY },
  '#': { prefix: '#', value: ANY },
  '.': { prefix: '.', value: NO_DOT_SLASH_QUERY_FRAGMENT },
  '/': { prefix: '/', value: NO_QUERY_FRAGMENT },
  ';': { prefix: ';', value: NO_SLASH_QUERY_FRAGMENT },
  '?': { prefix: '?', value: NO_FRAGMENT },
  '&': { prefix: '&', value: NO_FRAGMENT },
};

export class UriTemplateMatcher {
  readonly template: string;
  readonly #states: State[] = [];
  #final = -1;
  /** States visited by the last `matches` call: never more than `size` × (URI length + 1). */
  lastWork = 0;

  constructor(template: string) {
    this.template = template;
    if (template.length > MAX_TEMPLATE_LENGTH) return;
    let at = this.#state();
    for (let i = 0; i < template.length; ) {
      const open = template.indexOf('{', i);
      const literalEnd = open === -1 ? template.length : open;
      for (; i < literalEnd; i++) at = this.#char(at, template.charCodeAt(i));
      if (open === -1) break;
      const close = template.indexOf('}', open);
      if (close === -1) {
        // An unclosed brace is a literal, as the rest of the template.
        for (; i < template.length; i++) at = this.#char(at, template.charCodeAt(i));
        break;
      }
      const first = template[open + 1] ?? '';
      const operator = OPERATORS[first] !== undefined && first !== '' ? first : '';
      at = this.#expression(at, OPERATORS[operator]!);
      i = close + 1;
    }
    this.#final = at;
  }

  /** Whether `uri` is an expansion of the template (false, too, once `budget` is spent). */
  matches(uri: string, budget: MatchBudget = { remaining: Infinity }): boolean {
    if (this.#final === -1 || uri.length > MAX_URI_LENGTH || budget.remaining <= 0) return false;
    // `seen[s] === step` marks state s as already in the set of step `step` (no clearing per step).
    const seen = new Int32Array(this.#states.length).fill(-1);
    let current: number[] = [];
    this.#add(current, seen, 0, 0);
    let work = current.length;
    for (let i = 0; i < uri.length && current.length > 0; i++) {
      const code = uri.charCodeAt(i);
      const next: number[] = [];
      for (const s of current) {
        for (const edge of this.#states[s]!.edges) if (edge.test(code)) this.#add(next, seen, edge.to, i + 1);
      }
      current = next;
      work += next.length;
      if (work > budget.remaining) {
        budget.remaining = 0;
        this.lastWork = work;
        return false;
      }
    }
    budget.remaining -= work;
    this.lastWork = work;
    return current.includes(this.#final);
  }

  /** States of the compiled automaton (0 for a template too long to compile). */
  get size(): number {
    return this.#final === -1 ? 0 : this.#states.length;
  }

  #state(): number {
    this.#states.push({ edges: [], empty: [] });
    return this.#states.length - 1;
  }

  /** Adds `state`, and what it reaches on no character, to the set of step `step`. */
  #add(set: number[], seen: Int32Array, state: number, step: number): void {
    if (seen[state] === step) return;
    seen[state] = step;
    set.push(state);
    for (const to of this.#states[state]!.empty) this.#add(set, seen, to, step);
  }

  #char(from: number, code: number): number {
    const to = this.#state();
    this.#states[from]!.edges.push({ test: (c) => c === code, to });
    return to;
  }

  /** `prefix` then one or more characters of `value`; with a prefix, possibly nothing at all. */
  #expression(from: number, { prefix, value }: { prefix: string; value: CharTest }): number {
    let at = from;
    for (let i = 0; i < prefix.length; i++) at = this.#char(at, prefix.charCodeAt(i));
    const run = this.#state();
    this.#states[at]!.edges.push({ test: value, to: run });
    this.#states[run]!.edges.push({ test: value, to: run });
    if (prefix === '') return run;
    const after = this.#state();
    this.#states[run]!.empty.push(after);
    this.#states[from]!.empty.push(after);
    return after;
  }
}
