/**
 * A session record as a later generation of the server sees it (core/vmcp/reload-sessions.ts):
 * the same object while it names exactly the generation's backends (the check made on every
 * request), else backends the configuration lost dropped and backends it gained listed missing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BackendSessionRecord, SessionRecord } from '../../core/mcp/aggregate/session-store.ts';
import { recordFor } from '../../core/vmcp/reload-sessions.ts';

const joined: BackendSessionRecord = { sessionId: 's', protocolVersion: '2025-06-18', capabilities: {} };

function record(backends: string[], missing: string[]): SessionRecord {
  return {
    v: 2,
    id: 'session',
    owner: null,
    createdAt: 0,
    protocolVersion: '2025-06-18',
    clientInfo: null,
    clientCapabilities: {},
    backends: Object.fromEntries(backends.map((name) => [name, joined])),
    missing,
  } as unknown as SessionRecord;
}

const view = (r: SessionRecord): { backends: string[]; missing: string[] } => ({ backends: Object.keys(r.backends), missing: [...r.missing] });

describe('recordFor: a session record as a generation with these backends sees it', () => {
  it('is the very record when it names exactly the backends, joined or missing', () => {
    for (const r of [record(['a', 'b'], []), record(['a'], ['b']), record([], ['a', 'b'])]) assert.equal(recordFor(r, new Set(['a', 'b'])), r);
  });

  it('drops the backends the configuration lost, joined or missing, and lists those it gained as missing', () => {
    assert.deepEqual(view(recordFor(record(['a', 'gone'], ['lost']), new Set(['a', 'new']))), { backends: ['a'], missing: ['new'] });
    assert.deepEqual(view(recordFor(record(['a'], []), new Set(['a', 'b']))), { backends: ['a'], missing: ['b'] });
    assert.deepEqual(view(recordFor(record(['a', 'b'], []), new Set(['a']))), { backends: ['a'], missing: [] });
  });

  it('is not fooled into "alike" by a name listed twice, or both joined and missing', () => {
    assert.deepEqual(view(recordFor(record([], ['a', 'a']), new Set(['a', 'b']))), { backends: [], missing: ['a', 'a', 'b'] });
    assert.deepEqual(view(recordFor(record(['a'], ['a']), new Set(['a', 'b']))), { backends: ['a'], missing: ['a', 'b'] });
  });
});
