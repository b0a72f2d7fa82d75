/**
 * Keeps String.prototype in V8's fast mode, where optimised code finds a string's method
 * (`charCodeAt`, `indexOf`, `toLowerCase`...) with one map check.
 *
 * Why: a class that extends String — ioredis's RESP3 decoder declares one (VerbatimString), and
 * ioredis loads with the Redis session store — makes V8 turn String.prototype into a dictionary
 * (it "normalises" an object that becomes a prototype), and there it stays: V8 makes a
 * prototype fast again only when an object's property is read through it, and a string is not
 * an object. From then on every string method optimised code calls is looked up by the generic
 * LoadIC builtin, some 130 instructions each: about 20 times a request on the gateway's own
 * path (request-head.ts, the response head, answer-bytes.ts) and more in its dependencies; seen in
 * the load rows' instruction profiles (bench/README.md).
 *
 * How: a property read through String.prototype from a String object, by a function with
 * feedback (it has run a few times), marks String.prototype as a prototype to keep fast and makes
 * it fast if it is not (V8's JSObject::MakePrototypesFast); once marked, a later subclass no
 * longer normalises it. It runs when this module loads and again when the server starts, after
 * every static import; nothing else in the process changes.
 */

/** A read of `valueOf` from `target`, through its prototype chain. */
function readThrough(target: object): unknown {
  return (target as { valueOf: unknown }).valueOf;
}

/** Marks String.prototype as a prototype V8 keeps fast, and makes it fast again if a subclass normalised it. */
export function keepStringMethodsFast(): void {
  const wrapper = Object('');
  // V8 gives a function its feedback (the inline caches that do this) after a few calls.
  for (let i = 0; i < 64; i++) readThrough(wrapper);
}

keepStringMethodsFast();
