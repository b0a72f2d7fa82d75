/** Client declarations of a chosen size, for the tests of what a session keeps. */

/**
 * Capabilities that are `bytes` long as JSON (exactly, from 64 bytes up), as a client may declare
 * them: roots, and an `experimental` member padded with strings of `valueLength` characters (short
 * ones cost the heap more per byte: a property each).
 */
export function paddedCapabilities(bytes: number, valueLength = 1024): Record<string, unknown> {
  const base = { roots: { listChanged: true }, experimental: { pad: {} as Record<string, string> } };
  const pad = base.experimental.pad;
  let size = JSON.stringify(base).length;
  for (let i = 0; size < bytes; i++) {
    const key = `k${i}`;
    // ,"key":"value" : a comma before all but the first, quotes and a colon around the value.
    const frame = key.length + 5 + (i === 0 ? 0 : 1);
    const room = bytes - size - frame;
    if (room < 0) {
      // No room for one more member: the last one takes the rest.
      if (i > 0) pad[`k${i - 1}`] += 'x'.repeat(bytes - size);
      break;
    }
    const value = 'x'.repeat(Math.min(valueLength, room));
    pad[key] = value;
    size += frame + value.length;
  }
  return base;
}
