/**
 * The in-memory store of the authorization server under a flood: records that stand for someone's
 * standing access (clients, grants, sessions, refresh tokens) are never evicted to make room —
 * past the budget a new one is refused — while short-lived ones (interactions) are evicted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryAdapterClass } from '../../plugins/auth-server/memory-adapter.ts';
import { clientBudget } from '../../plugins/auth-server/store-errors.ts';

const MIB = 'x'.repeat(1024 * 1024);

test('a flood of registrations is refused past the budget; the clients already there stay', async () => {
  const Adapter = memoryAdapterClass({ clientIdleSeconds: 3600, maxClients: 100_000 });
  const clients = new Adapter('Client');
  await clients.upsert('real-client', { client_id: 'real-client', client_name: 'real' });
  let refused = 0;
  for (let i = 0; i < 40; i++) {
    try {
      await clients.upsert(`flood-${i}`, { client_id: `flood-${i}`, client_name: MIB });
    } catch (err) {
      refused++;
      assert.match(String((err as { error_description?: string }).error_description), /storage of Client records is full/);
    }
  }
  assert.ok(refused > 0, 'past 32 MiB new clients are refused');
  assert.equal((await clients.find('real-client'))?.['client_name'], 'real', 'the real client was not evicted');
});

test('a flood of interactions evicts the oldest interactions, not anything else', async () => {
  const Adapter = memoryAdapterClass({ clientIdleSeconds: 3600, maxClients: 100_000 });
  const interactions = new Adapter('Interaction');
  const grants = new Adapter('Grant');
  await grants.upsert('g1', { accountId: 'alice' }, 3600);
  for (let i = 0; i < 40; i++) await interactions.upsert(`i-${i}`, { uid: `u-${i}`, params: { state: MIB } }, 600);
  assert.equal(await interactions.find('i-0'), undefined, 'the oldest interaction went');
  assert.ok((await interactions.find('i-39')) !== undefined);
  assert.equal((await grants.find('g1'))?.['accountId'], 'alice');
});

test('a registered client unused for its idle time (the refresh token lifespan) is gone; each use keeps it', async () => {
  const Adapter = memoryAdapterClass({ clientIdleSeconds: 1, maxClients: 100_000 });
  const clients = new Adapter('Client');
  await clients.upsert('used', { client_id: 'used' });
  await clients.upsert('idle', { client_id: 'idle' });
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 450));
    assert.ok((await clients.find('used')) !== undefined);
  }
  assert.equal(await clients.find('idle'), undefined, 'unused for more than a second');
  assert.ok((await clients.find('used')) !== undefined, 'used every 450 ms');
  const grants = new Adapter('Grant');
  await grants.upsert('g', { accountId: 'a' });
  await new Promise((resolve) => setTimeout(resolve, 1100));
  assert.ok((await grants.find('g')) !== undefined, 'other records keep their own lifetimes');
});

test('a full client budget (maxClients) drops the oldest client never used, never one a user granted; with none to drop, a 503 naming the limit', async (t) => {
  const Adapter = memoryAdapterClass({ clientIdleSeconds: 3600, maxClients: 3 });
  const clients = new Adapter('Client');
  const grants = new Adapter('Grant');
  for (const id of ['granted', 'unused-1', 'unused-2']) await clients.upsert(id, { client_id: id });
  await grants.upsert('g', { accountId: 'alice', clientId: 'granted' }, 3600);
  // All three are younger than the grace (a sign-in may be under way): nothing may go.
  await assert.rejects(clients.upsert('new-1', { client_id: 'new-1' }), (err: Error & { status?: number; error?: string }) => {
    assert.equal(err.status, 503);
    assert.equal(err.error, 'temporarily_unavailable');
    assert.match(String((err as { error_description?: string }).error_description), /at most 3 registered clients \(authServerConfig\.maxClients\)/);
    return true;
  });
  const grace = clientBudget.unusedGraceMs;
  clientBudget.unusedGraceMs = 0;
  t.after(() => {
    clientBudget.unusedGraceMs = grace;
  });
  await clients.upsert('new-1', { client_id: 'new-1' });
  await clients.upsert('new-2', { client_id: 'new-2' });
  assert.equal(await clients.find('unused-1'), undefined, 'the oldest unused went first');
  assert.equal(await clients.find('unused-2'), undefined);
  assert.ok((await clients.find('granted')) !== undefined, 'the client a user granted stays');
  await clients.upsert('new-3', { client_id: 'new-3' });
  assert.equal(await clients.find('new-1'), undefined);
  assert.ok((await clients.find('granted')) !== undefined);
});
