/**
 * The store suite: one set of tests run unchanged on every engine (PGlite in memory, a real
 * PostgreSQL server), so that the one SQL schema behaves the same everywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ClaimMap } from '../../../plugins/registry-authz/claims.ts';
import type { SourceDefinition } from '../../../plugins/registry/config/registry-config.ts';
import { GatewayError } from '../../../core/base/errors.ts';
import { callerClaimPairs, sameClaims } from '../../../plugins/registry-authz/claims.ts';
import { applyConfig } from '../../../plugins/registry/store/apply-config.ts';
import { documentDigest, type ClaimsCheck, type PublishInput } from '../../../plugins/registry/store/entries-store.ts';
import { migrate } from '../../../plugins/registry/store/migrations.ts';
import type { EntryFilter, ServedVersion, VersionRecord } from '../../../plugins/registry/store/records.ts';
import { writeSourceEntries, type SyncItem } from '../../../plugins/registry/store/source-sync-writer.ts';
import type { Store } from '../../../plugins/registry/store/store.ts';

export function managed(name: string, claims: ClaimMap = {}): SourceDefinition {
  return { name, kind: 'managed', format: null, file: null, git: null, api: null, cluster: null, syncIntervalMs: null, claims };
}

export function fileSource(name: string, claims: ClaimMap = {}): SourceDefinition {
  return { name, kind: 'file', format: 'upstream', file: { path: `/nonexistent/${name}.json` }, git: null, api: null, cluster: null, syncIntervalMs: 60_000, claims };
}

const allow: ClaimsCheck = () => null;
const sameAsFirst = (claims: ClaimMap): ClaimsCheck => (existing) =>
  existing !== null && !sameClaims(existing, claims) ? new GatewayError('claims_mismatch', 'mismatch', { status: 409 }) : null;

function input(name: string, version: string, claims: ClaimMap = { org: 'acme' }, over: Partial<PublishInput> = {}): PublishInput {
  return { source: 'internal', kind: 'server', name, version, document: { name, version, description: `${name} ${version}` }, claims, ...over };
}

function item(name: string, version: string, extra: Record<string, unknown> = {}): SyncItem {
  const document = { name, version, description: 'synced', ...extra };
  return { kind: 'server', name, version, document, digest: documentDigest(document) };
}

function filterFor(claims: Record<string, unknown>): EntryFilter {
  return { pairs: callerClaimPairs(claims) };
}

const ids = (versions: readonly ServedVersion[]): string[] => versions.map((v) => `${v.name}@${v.version}`);

async function rejectsWith(promise: Promise<unknown>, code: string, status: number): Promise<void> {
  await assert.rejects(promise, (err: unknown) => err instanceof GatewayError && err.code === code && err.status === status);
}

export function storeSuite(engine: string, open: () => Promise<Store | { skip: string }>, cleanup: () => Promise<void> = async () => {}): void {
  let store: Store;
  let skip: string | null = null;

  describe(`store on ${engine}`, () => {
    before(async () => {
      const opened = await open();
      if ('skip' in opened) skip = opened.skip;
      else store = opened;
    });
    after(async () => {
      if (skip === null) await store.close();
      await cleanup();
    });
    const test = (name: string, body: () => Promise<void>): void => {
      it(name, async (t) => {
        if (skip !== null) return t.skip(skip);
        await body();
      });
    };

    test('migrations are applied once: a second run applies nothing', async () => {
      assert.deepEqual(await migrate(store.db), []);
    });

    test('sources: create, update, list, get; a registry lists existing sources, at most one managed', async () => {
      assert.equal((await store.sources.put(managed('internal'), 'config')).created, true);
      assert.equal((await store.sources.put(managed('internal'), 'config')).created, false);
      await store.sources.put(managed('other'), 'api');
      await store.sources.put(fileSource('files', { org: 'acme' }), 'api');
      assert.deepEqual((await store.sources.list()).map((s) => [s.name, s.kind, s.origin]), [['files', 'file', 'api'], ['internal', 'managed', 'config'], ['other', 'managed', 'api']]);
      await rejectsWith(store.registries.put({ name: 'bad', sources: ['internal', 'missing'], claims: {} }, 'api'), 'unknown_source', 400);
      await rejectsWith(store.registries.put({ name: 'bad', sources: ['internal', 'other'], claims: {} }, 'api'), 'invalid_request', 400);
      const { created, record } = await store.registries.put({ name: 'main', sources: ['internal', 'files'], claims: { org: 'acme' } }, 'config');
      assert.equal(created, true);
      assert.deepEqual([record.sources, record.managedSource, record.claims], [['internal', 'files'], 'internal', { org: 'acme' }]);
      assert.equal(await store.registries.get('bad'), null);
    });

    test('a source used by a registry cannot be deleted (409 source_in_use)', async () => {
      await rejectsWith(store.sources.delete('files'), 'source_in_use', 409);
      assert.equal(await store.sources.delete('other'), true);
      assert.equal(await store.sources.delete('other'), false);
    });

    test('publish, read back (newest publication first), and "latest" by semver precedence', async () => {
      for (const version of ['1.9.0', '1.10.0', '2.0.0-rc.1', '1.0.0']) await store.entries.publish(input('io.acme/weather', version), allow);
      const versions = await store.entries.versionsOf('main', 'server', 'io.acme/weather', null);
      assert.deepEqual(versions.map((v) => v.version), ['1.0.0', '2.0.0-rc.1', '1.10.0', '1.9.0']);
      assert.deepEqual(versions.map((v) => v.isLatest), [false, true, false, false]);
      const latest = await store.entries.getVersion('main', 'server', 'io.acme/weather', 'latest', null);
      assert.equal(latest?.version, '2.0.0-rc.1');
      assert.deepEqual(latest?.document, { name: 'io.acme/weather', version: '2.0.0-rc.1', description: 'io.acme/weather 2.0.0-rc.1' });
    });

    test('a duplicate version is refused (409 version_exists)', async () => {
      await rejectsWith(store.entries.publish(input('io.acme/weather', '1.0.0'), allow), 'version_exists', 409);
    });

    test('the claims check sees the claims of the versions already published', async () => {
      const seen: (ClaimMap | null)[] = [];
      const spy: ClaimsCheck = (existing) => (seen.push(existing), null);
      await store.entries.publish(input('io.acme/new', '1.0.0', { org: 'acme', team: 'a' }), spy);
      await store.entries.publish(input('io.acme/new', '1.1.0', { org: 'acme', team: 'a' }), spy);
      assert.deepEqual(seen, [null, { org: 'acme', team: 'a' }]);
      await rejectsWith(store.entries.publish(input('io.acme/new', '1.2.0', { org: 'acme' }), sameAsFirst({ org: 'acme' })), 'claims_mismatch', 409);
      assert.equal(await store.entries.getVersion('main', 'server', 'io.acme/new', '1.2.0', null), null);
    });

    test('concurrent publishes of one version: exactly one succeeds, the others get 409', async () => {
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => store.entries.publish(input('io.acme/race', '1.0.0'), allow)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
        assert.ok(r.reason instanceof GatewayError && r.reason.code === 'version_exists', String(r.reason));
      }
    });

    test('concurrent first versions with different claims: one set of claims wins, the others are refused', async () => {
      const claims = (i: number): ClaimMap => ({ org: 'acme', team: i % 2 === 0 ? 'a' : 'b' });
      const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.entries.publish(input('io.acme/split', `1.0.${i}`, claims(i)), sameAsFirst(claims(i)))));
      const winners = results.filter((r): r is PromiseFulfilledResult<VersionRecord> => r.status === 'fulfilled').map((r) => r.value);
      assert.ok(winners.length >= 1);
      assert.ok(winners.every((w) => sameClaims(w.claims, winners[0]!.claims)));
      assert.equal(winners.length, 4);
    });

    test('a publish that fails midway leaves nothing behind', async () => {
      await assert.rejects(store.entries.publish(input('io.acme/half', 'bad\u0000version'), allow));
      assert.deepEqual(await store.entries.versionsOf('main', 'server', 'io.acme/half', null), []);
      await store.entries.publish(input('io.acme/half', '1.0.0', { org: 'other' }), sameAsFirst({ org: 'other' }));
    });

    test('the entry filter: visible when the caller holds every claim; claimless entries only unfiltered', async () => {
      await store.entries.publish(input('io.acme/platform-only', '1.0.0', { org: 'acme', team: 'platform' }), allow);
      await store.entries.publish(input('io.acme/claimless', '1.0.0', {}), allow);
      const page = async (filter: EntryFilter) =>
        ids((await store.listing.versions({ registry: 'main', kind: 'server', filter, cursor: null, limit: 100, search: null, updatedSince: null, version: 'latest' })).items);
      const data = await page(filterFor({ org: 'acme', team: ['data', 'a'] }));
      assert.ok(data.includes('io.acme/weather@2.0.0-rc.1') && data.includes('io.acme/new@1.1.0'));
      assert.ok(!data.includes('io.acme/platform-only@1.0.0') && !data.includes('io.acme/claimless@1.0.0') && !data.includes('io.acme/half@1.0.0'));
      const platform = await page(filterFor({ org: 'acme', team: 'platform' }));
      assert.ok(platform.includes('io.acme/platform-only@1.0.0'));
      assert.ok(!platform.includes('io.acme/new@1.1.0'));
      assert.ok((await page(null)).includes('io.acme/claimless@1.0.0'));
      assert.deepEqual(await page(filterFor({})), []);
      assert.equal(await store.entries.getVersion('main', 'server', 'io.acme/platform-only', 'latest', filterFor({ org: 'acme' })), null);
    });

    test('pagination: every visible version exactly once, in name and version order, whatever the page size', async () => {
      for (let i = 0; i < 25; i++) await store.entries.publish(input(`io.acme/page-${String(i).padStart(2, '0')}`, '1.0.0', i % 3 === 0 ? { org: 'acme', team: 'x' } : { org: 'acme' }), allow);
      const filter = filterFor({ org: 'acme' });
      const all = ids((await store.listing.versions({ registry: 'main', kind: 'server', filter, cursor: null, limit: 1000, search: 'page-', updatedSince: null, version: null })).items);
      assert.equal(all.length, 16);
      for (const limit of [1, 3, 7, 16]) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page = await store.listing.versions({ registry: 'main', kind: 'server', filter, cursor, limit, search: 'PAGE-', updatedSince: null, version: null });
          assert.ok(page.items.length <= limit);
          seen.push(...ids(page.items));
          cursor = page.nextCursor;
        } while (cursor !== null);
        assert.deepEqual(seen, all);
      }
    });

    test('version filters and updated_since', async () => {
      const exact = await store.listing.versions({ registry: 'main', kind: 'server', filter: null, cursor: null, limit: 100, search: 'weather', updatedSince: null, version: '1.9.0' });
      assert.deepEqual(ids(exact.items), ['io.acme/weather@1.9.0']);
      const mark = new Date();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await store.entries.publish(input('io.acme/weather', '3.0.0'), allow);
      const since = await store.listing.versions({ registry: 'main', kind: 'server', filter: null, cursor: null, limit: 100, search: null, updatedSince: mark, version: null });
      // The new version, and the previous latest whose isLatest flag changed.
      assert.deepEqual(ids(since.items), ['io.acme/weather@2.0.0-rc.1', 'io.acme/weather@3.0.0']);
    });

    test('deleting versions moves "latest" back; the entry and its claims stay with its tombstones', async () => {
      assert.equal((await store.entries.deleteVersion('internal', 'server', 'io.acme/weather', '3.0.0', null))?.version, '3.0.0');
      assert.equal((await store.entries.getVersion('main', 'server', 'io.acme/weather', 'latest', null))?.version, '2.0.0-rc.1');
      assert.equal(await store.entries.deleteVersion('internal', 'server', 'io.acme/weather', '3.0.0', null), null);
      assert.equal(await store.entries.deleteVersion('internal', 'server', 'io.acme/platform-only', '1.0.0', filterFor({ org: 'acme' })), null, 'invisible: not deleted');
      assert.ok(await store.entries.deleteVersion('internal', 'server', 'io.acme/platform-only', '1.0.0', null));
      // Its tombstone keeps the entry, and its claims: a new version must carry them.
      await rejectsWith(store.entries.publish(input('io.acme/platform-only', '2.0.0', { org: 'acme' }), sameAsFirst({ org: 'acme' })), 'claims_mismatch', 409);
    });

    test('sync writes only differences, inherits the source claims and keeps untouched versions as they were', async () => {
      const first = await writeSourceEntries(store.db, 'files', { org: 'acme' }, [item('io.files/a', '1.0.0'), item('io.files/a', '1.1.0'), item('io.files/b', '0.1.0')]);
      assert.deepEqual(first, { inserted: 3, updated: 0, deleted: 0 });
      const before = await store.entries.versionsOf('main', 'server', 'io.files/a', null);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await writeSourceEntries(store.db, 'files', { org: 'acme' }, [item('io.files/a', '1.0.0'), item('io.files/a', '1.1.0', { title: 'A' }), item('io.files/c', '1.0.0')]);
      assert.deepEqual(second, { inserted: 1, updated: 1, deleted: 1 });
      const afterSync = await store.entries.versionsOf('main', 'server', 'io.files/a', null);
      assert.equal(afterSync[1]!.updatedAt.getTime(), before[1]!.updatedAt.getTime(), 'unchanged version keeps its update time');
      assert.ok(afterSync[0]!.updatedAt.getTime() > before[0]!.updatedAt.getTime());
      assert.deepEqual(afterSync.map((v) => [v.version, v.isLatest, v.claims]), [['1.1.0', true, { org: 'acme' }], ['1.0.0', false, { org: 'acme' }]]);
      assert.deepEqual(await store.entries.versionsOf('main', 'server', 'io.files/b', null), []);
      // New source claims reach every entry of the source.
      await store.sources.put(fileSource('files', { org: 'acme', team: 'x' }), 'api');
      assert.deepEqual((await store.entries.getVersion('main', 'server', 'io.files/c', 'latest', null))?.claims, { org: 'acme', team: 'x' });
    });

    test('a name a synced source holds outranks the managed source\'s, whatever their order; publishing it is refused', async () => {
      await writeSourceEntries(store.db, 'files', { org: 'acme' }, [item('io.acme/new', '9.9.9'), item('io.files/c', '1.0.0')]);
      // "internal" (managed) comes first in registry main, but "files" is curated: its io.acme/new
      // wins with all its versions, so a name published first never hides what the operator syncs.
      assert.deepEqual((await store.entries.versionsOf('main', 'server', 'io.acme/new', null)).map((v) => `${v.source}@${v.version}`), ['files@9.9.9']);
      await rejectsWith(store.entries.publish(input('io.files/c', '2.0.0'), allow), 'name_conflict', 409);
    });

    test('raw entries of a source and of a registry, filtered and paged', async () => {
      const source = await store.listing.sourceEntries('files', { filter: null, cursor: null, limit: 10 });
      assert.deepEqual(source.items.map((e) => e.name), ['io.acme/new', 'io.files/c']);
      const filter = filterFor({ org: 'acme', team: ['a'] });
      const registry = await store.listing.registryEntries('main', { filter, cursor: null, limit: 2 });
      assert.equal(registry.items.length, 2);
      assert.ok(registry.nextCursor !== null);
      const rest = await store.listing.registryEntries('main', { filter, cursor: registry.nextCursor, limit: 500 });
      const names = [...registry.items, ...rest.items].map((e) => e.name);
      assert.ok(!names.includes('io.acme/claimless'));
      assert.equal(names.filter((n) => n === 'io.acme/new').length, 1, 'the shadowed copy is not served');
      assert.ok(names.includes('io.files/c'));
      const weather = [...registry.items, ...rest.items].find((e) => e.name === 'io.acme/weather');
      assert.deepEqual(weather?.versions.map((v) => v.version), ['2.0.0-rc.1', '1.10.0', '1.9.0', '1.0.0']);
    });

    test('applying a config: stale registries go, a stale managed source stays (API-managed) with a warning', async () => {
      await store.sources.put(managed('legacy'), 'config');
      await store.registries.put({ name: 'legacy-reg', sources: ['legacy'], claims: {} }, 'config');
      await store.entries.publish(input('io.legacy/kept', '1.0.0', {}, { source: 'legacy' }), allow);
      await store.sources.put(fileSource('stale-file'), 'config');
      const warnings = await applyConfig(store, [managed('internal'), fileSource('files', { org: 'acme', team: 'x' })], [{ name: 'main', sources: ['internal', 'files'], claims: { org: 'acme' } }]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /"legacy".*managed source/);
      assert.equal(await store.registries.get('legacy-reg'), null);
      assert.equal((await store.sources.get('legacy'))?.origin, 'api');
      assert.equal(await store.sources.get('stale-file'), null);
      assert.equal((await store.listing.sourceEntries('legacy', { filter: null, cursor: null, limit: 10 })).items.length, 1);
    });

    test('planner statistics: the entry tables are analyzed once enough rows changed (no waiting for autovacuum)', async () => {
      const reltuples = async () => (await store.db.query<{ n: number }>("SELECT reltuples::int AS n FROM pg_class WHERE relname = 'entry_versions'"))[0]!.n;
      await store.statistics.refresh();
      const before = await reltuples();
      const items = Array.from({ length: 300 }, (_, i) => item(`io.stats/s${i}`, '1.0.0'));
      const written = await writeSourceEntries(store.db, 'files', { org: 'acme' }, items);
      assert.ok(written !== false);
      store.statistics.noteChanges(written.inserted + written.updated + written.deleted);
      await store.statistics.idle();
      assert.ok((await reltuples()) >= before + 250, 'ANALYZE ran and saw the new rows');
    });

    test('a managed source with entries cannot silently become a synced one', async () => {
      await rejectsWith(store.sources.put(fileSource('legacy'), 'config'), 'source_in_use', 409);
    });
  });
}
