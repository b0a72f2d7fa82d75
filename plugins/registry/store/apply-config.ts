/**
 * The config file's sources and registries, written to the store at start. The file is the
 * source of truth for what it defines (those are read-only through the admin API); what the
 * admin API created is left alone. Resources that left the file are removed, except what would
 * lose data or break an API-created registry: a managed source (its published entries), or a
 * source an API-created registry still lists. Those stay, now managed through the API.
 */
import type { RegistryDefinition, SourceDefinition } from '../config/registry-config.ts';
import type { Store } from './store.ts';

/** Arbitrary constant: serialises replicas applying their config at the same time. */
const CONFIG_LOCK = '7305001915';

/** Applies the config; returns warnings about what was kept. */
export async function applyConfig(store: Store, sources: readonly SourceDefinition[], registries: readonly RegistryDefinition[]): Promise<string[]> {
  return store.db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [CONFIG_LOCK]);
    const warnings: string[] = [];
    for (const source of sources) await store.sources.put(source, 'config', tx);

    const staleRegistries = await tx.query<{ name: string }>("SELECT name FROM registries WHERE origin = 'config' AND NOT (name = ANY($1::text[]))", [registries.map((r) => r.name)]);
    for (const { name } of staleRegistries) await store.registries.delete(name, tx);
    for (const registry of registries) await store.registries.put(registry, 'config', tx);

    const staleSources = await tx.query<{ name: string; kind: string }>("SELECT name, kind FROM sources WHERE origin = 'config' AND NOT (name = ANY($1::text[]))", [sources.map((s) => s.name)]);
    for (const { name, kind } of staleSources) {
      const users = await store.sources.registriesUsing(name, tx);
      if (kind === 'managed' || users.length > 0) {
        await tx.query("UPDATE sources SET origin = 'api', updated_at = now() WHERE name = $1", [name]);
        const why = kind === 'managed' ? 'it is a managed source (its published entries are kept)' : `registr${users.length === 1 ? 'y' : 'ies'} ${users.join(', ')} still list${users.length === 1 ? 's' : ''} it`;
        warnings.push(`source "${name}" is no longer in the configuration but was kept because ${why}; it is now managed through the admin API`);
      } else {
        await tx.query('DELETE FROM sources WHERE name = $1', [name]);
      }
    }
    return warnings;
  });
}
