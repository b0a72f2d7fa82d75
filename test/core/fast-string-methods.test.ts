/**
 * String.prototype stays in V8's fast mode in a gateway process (core/base/fast-string-methods.ts):
 * ioredis declares a subclass of String, which left it a dictionary, and every string method
 * optimised code called went through the generic LoadIC. Checked in a child node with
 * `--allow-natives-syntax` (%HasFastProperties), the only way to ask V8.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const module = (path: string): string => JSON.stringify(fileURLToPath(new URL(`../../${path}`, import.meta.url)));

/** What `script` (an ES module, natives syntax allowed) prints, in a node of its own. */
function run(script: string): string {
  return execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 }).trim();
}

describe('String.prototype kept fast', () => {
  it('the subclass of String that ioredis declares leaves it a dictionary, without this module (what it guards against)', () => {
    assert.equal(run(`await import('ioredis'); console.log(%HasFastProperties(String.prototype));`), 'false');
  });

  it('stays fast once the Redis store (ioredis with it) is loaded, and through a later subclass', () => {
    const out = run(`await import(${module('core/store/redis.ts')});
      const loaded = %HasFastProperties(String.prototype);
      class Later extends String {}
      console.log(loaded, %HasFastProperties(String.prototype), new Later('x').length);`);
    assert.equal(out, 'true true 1');
  });

  it('is made fast again when a subclass came first: what the server does when it starts listening', () => {
    const out = run(`class First extends String {}
      const before = %HasFastProperties(String.prototype);
      const { keepStringMethodsFast } = await import(${module('core/base/fast-string-methods.ts')});
      keepStringMethodsFast();
      console.log(before, %HasFastProperties(String.prototype), 'abc'.charCodeAt(1), new First('y').length);`);
    assert.equal(out, 'false true 98 1');
  });
});
