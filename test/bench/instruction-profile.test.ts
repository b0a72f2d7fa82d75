/**
 * The load rows' instructions by function (bench/load/instruction-profile.ts): self cost read
 * from callgrind's format, JIT code named from node's perf map, kinds and Markdown.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collections, instructionProfile, instructionProfileMarkdown, kindOf } from '../../bench/load/instruction-profile.ts';

/** A callgrind dump: `send` (JIT, at 0x2000) costs 300 itself and calls Builtins_LoadIC (costing 50) for 50 inclusive. */
const dump = (trigger: string): string => `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 7
desc: Trigger: dump ${trigger}

positions: line
events: Ir
summary: 400

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) 0x0000000000002010
0 200
cfn=(2) Builtins_LoadIC
calls=3 0
0 50
0 100
fn=(2)
0 50
fn=(3) v8::internal::compiler::GraphReducer::ReduceTop()
0 40
fn=(4) 0x0000000000009000
+2 10
totals: 400
`;

describe('instruction profile of a load row', () => {
  it('adds each function’s own instructions (not its calls’), names JIT code by the last perf map line that covers it, and divides by the requests', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-instruction-profile-'));
    try {
      writeFileSync(join(dir, 'cg.7.2'), dump('measured-1'));
      writeFileSync(join(dir, 'cg.7.3'), dump('measured-1')); // the same window dumped again (asked twice): both count
      writeFileSync(join(dir, 'cg.7.4'), dump('measured-10')); // another window: not counted
      writeFileSync(join(dir, 'cg.7.1'), dump('warm')); // not counted
      // 0x2000 held `old` first; the GC freed it and `send` took its place.
      writeFileSync(join(dir, 'perf-7.map'), '2000 100 JS:~old file:///repo/core/old.ts:1:1\n1f00 400 JS:*send file:///repo/core/upstream/pool.ts:1:1065\n');
      const profile = instructionProfile(dir, 'measured-1', 10, '/repo');
      assert.equal(profile.perRequest, 80); // (200 + 100 + 50 + 40 + 10) × 2 dumps ÷ 10 requests
      const byName = new Map(profile.functions.map((f) => [f.name, f]));
      assert.equal(byName.get('send core/upstream/pool.ts')?.perRequest, 60);
      assert.equal(byName.get('send core/upstream/pool.ts')?.kind, 'gatehouse');
      assert.equal(byName.get('Builtins_LoadIC')?.perRequest, 10);
      assert.equal(byName.get('0x0000000000009000')?.kind, 'other', 'an address no map line covers stays an address');
      writeFileSync(join(dir, 'perf-7.map'), '9000 10 JS:^warming file:///repo/plugins/x.ts:1:1\n', { flag: 'a' });
      const again = instructionProfile(dir, 'measured-1', 10, '/repo');
      assert.equal(again.functions.find((f) => f.name === 'warming plugins/x.ts (baseline code)')?.perRequest, 2, 'code not yet optimised says so');
      assert.equal(profile.byKind['optimising compiler'], 8);
      assert.equal(profile.functions[0]!.name, 'send core/upstream/pool.ts');
      const text = instructionProfileMarkdown('gatehouse (anonymous, transparent)', profile);
      assert.match(text, /^# gatehouse \(anonymous, transparent\): where its instructions go/);
      assert.match(text, /\| 60 \| 75\.0 % \| gatehouse \| `send core\/upstream\/pool\.ts` \|/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes the garbage collector apart: the calls into Heap::CollectGarbage and their inclusive cost, once however they nest', () => {
    const gc = 'v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags)';
    const text = `# callgrind format
events: Ir
summary: 9000
fn=(1) v8::internal::Factory::AllocateRaw(int)
0 100
cfn=(2) ${gc}
calls=1 0
0 5000
fn=(3) Builtins_AllocateInYoungGeneration
0 10
cfn=(2)
calls=2 0
0 3000
fn=(2)
0 1000
cfn=(4) v8::internal::ScavengerCollector::CollectGarbage()
calls=1 0
0 6000
cfn=(2)
calls=1 0
0 700
fn=(4)
0 6000
cfn=(5) free
calls=40 0
0 400
`;
    // 5000 + 3000 from outside, in 3 calls; the collection the collector started itself (700) is inside them.
    assert.deepEqual(collections(text), { count: 3, instructions: 8000 });
    assert.deepEqual(collections(text.replaceAll(gc, 'v8::internal::Heap::Other()')), { count: 0, instructions: 0 });
  });

  it('sorts functions into kinds', () => {
    assert.equal(kindOf('verify plugins/incoming-auth/validator.ts'), 'gatehouse');
    assert.equal(kindOf('get node_modules/lru-cache/dist/esm/index.js'), 'dependency');
    assert.equal(kindOf('Readable.read node:internal/streams/readable'), 'node (JS)');
    assert.equal(kindOf('RegExp:[^\\t\\x20-\\x7e\\x80-\\xff]'), 'regular expression');
    assert.equal(kindOf('Builtins_StringToLowerCaseIntl'), 'V8 builtin');
    assert.equal(kindOf('v8::internal::Heap::Scavenge()'), 'GC');
    assert.equal(kindOf('v8::internal::JsonParser<unsigned char>::ParseJsonValue<false>()'), 'V8 runtime');
    assert.equal(kindOf('llhttp__internal_execute'), 'llhttp');
    assert.equal(kindOf('node::InternalCallbackScope::Close()'), 'node (C++)');
    assert.equal(kindOf('_int_malloc'), 'libc');
  });
});
