/**
 * A registry read in the same process, for a virtual MCP server whose group it feeds
 * (`startVmcp({config, registrySource})`, when code embedding the gateway runs both): the admin
 * listing of the registry's entries (`GET /v1/registries/{name}/entries`), read from the store
 * without HTTP or a token.
 *
 * The registry's own rules apply to this reader as to a token with `claims`: in anonymous and
 * auth-only mode it sees every entry; under full authorization its claims must satisfy the
 * registry's (the gate) and it sees the entries whose claims it holds (a claimless entry is not
 * among them). Without `claims` it reads as the registry's operator (superAdmin) does: every
 * entry, claimless ones too, which the group would then serve to every caller.
 */
import type { RegistrySource } from '@gatehouse-mcp/gateway';
import { ANONYMOUS_CALLER, authenticatedCaller, canAccess, type Caller } from '../registry-authz/caller.ts';
import type { CallerClaims } from '../registry-authz/claims.ts';
import { entryList } from './api/shapes.ts';
import { entryFilterOf } from './api/steps.ts';
import type { RunningRegistry } from './registry-server.ts';

export interface InProcessSourceOptions {
  /** The registry's name (`registries[].name`). */
  readonly registry: string;
  /** The claims the gateway reads with, as a token's; absent: as the operator (every entry). */
  readonly claims?: CallerClaims;
}

const UNRESTRICTED: Caller = { mode: 'full', subject: 'gatehouse-vmcp', claims: {}, roles: ['superAdmin'], unrestricted: true };

function readerOf(registry: Pick<RunningRegistry, 'mode'>, claims: CallerClaims | undefined): Caller {
  if (registry.mode === 'anonymous') return ANONYMOUS_CALLER;
  if (claims === undefined) return UNRESTRICTED;
  return authenticatedCaller(registry.mode, 'gatehouse-vmcp', claims, {});
}

export function inProcessRegistrySource(registry: Pick<RunningRegistry, 'store' | 'mode'>, options: InProcessSourceOptions): RegistrySource {
  const name = options.registry;
  const caller = readerOf(registry, options.claims);
  return {
    label: `registry ${JSON.stringify(name)} (in process)`,
    async page(cursor, limit) {
      const record = await registry.store.registries.get(name);
      // As the HTTP listing answers: 404 for a registry that is not there or whose gate the reader fails.
      if (record === null || !canAccess(caller, record.claims)) throw new Error(`registry ${JSON.stringify(name)} not found (or the reader's claims do not satisfy its claims)`);
      const page = await registry.store.listing.registryEntries(name, { filter: entryFilterOf(caller), cursor, limit });
      return entryList(page, true);
    },
  };
}
