/**
 * The steps endpoints are made of: role checks (layer 3), loading the registry or source named
 * in the path, the registry gate (layer 1), and reading a JSON body.
 */
import { type Context, GatewayError, readBody } from '@gatehouse-mcp/gateway';
import { canAccess, holdsRole, type Caller } from '../../registry-authz/caller.ts';
import { callerClaimPairs } from '../../registry-authz/claims.ts';
import { callerOf } from '../../registry-authz/authz-plugin.ts';
import { ROLE_GRANTS, type RoleName } from '../../registry-authz/roles.ts';
import type { EntryFilter, SyncStatus } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import type { SyncSettings } from '../config/registry-config.ts';
import type { Step } from './endpoint.ts';
import { jsonValueProblem } from '../model/json-value.ts';
import { BODY, REGISTRY, SOURCE, required } from './slots.ts';
import { registryError } from '../errors.ts';

/** What the admin API asks of the source syncs (sync/scheduler.ts). */
export interface SourceSync {
  /** Reads the sources again after a change (new, changed and deleted sources). */
  refresh(): Promise<void>;
  /** Syncs one source now; null when it is not a synced source. */
  syncNow(name: string): Promise<SyncStatus | null>;
}

export interface ApiDeps {
  readonly store: Store;
  readonly maxBodyBytes: number;
  /** Null: no syncs run (tests of the API alone). */
  readonly sync?: SourceSync | null;
  /** What sources created through the API may reach. */
  readonly syncSettings?: SyncSettings;
}

const q = (text: string): string => JSON.stringify(text);

export function param(ctx: Context, name: string): string {
  return required(ctx.params?.[name], `path parameter ${name}`);
}

/** Layer 2 as the stores apply it: the claim pairs the caller holds, or null when nothing is filtered. */
export function entryFilterOf(caller: Caller): EntryFilter {
  return caller.unrestricted ? null : { pairs: callerClaimPairs(caller.claims) };
}

/** Layer 3: the operation needs `role` (superAdmin holds every role; roles apply under full authorization only). */
export function requireRole(role: RoleName): Step {
  const description = `this operation needs the ${role} role (${ROLE_GRANTS[role]}) or superAdmin`;
  return function requireRoleStep(ctx) {
    if (!holdsRole(callerOf(ctx), role)) throw new GatewayError('insufficient_permissions', description);
  };
}

export function registrySteps(deps: ApiDeps) {
  const { store } = deps;
  return {
    /** The registry named in the path, or 404. */
    async loadRegistry(ctx: Context): Promise<void> {
      const name = param(ctx, 'registry');
      const registry = await store.registries.get(name);
      if (registry === null) throw new GatewayError('not_found', `registry ${q(name)} not found`);
      ctx.set(REGISTRY, registry);
    },

    /** Layer 1, the access gate: 403 before any data when the caller does not satisfy the registry's claims. */
    gateRegistry(ctx: Context): void {
      const registry = required(ctx.get(REGISTRY), 'registry');
      if (!canAccess(callerOf(ctx), registry.claims)) {
        throw new GatewayError('forbidden', `your token does not satisfy the claims of registry ${q(registry.name)}`);
      }
    },

    /** Publishing and deleting entries write into the registry's managed source. */
    requireManagedSource(ctx: Context): void {
      const registry = required(ctx.get(REGISTRY), 'registry');
      if (registry.managedSource === null) {
        throw registryError('not_publishable', `registry ${q(registry.name)} has no managed source: entries can only be published to a registry that lists one`);
      }
    },

    /** The source named in the path; 404 when it does not exist or the caller may not access it (no disclosure). */
    async loadSource(ctx: Context): Promise<void> {
      const name = param(ctx, 'name');
      const source = await store.sources.get(name);
      if (source === null || !canAccess(callerOf(ctx), source.claims)) throw new GatewayError('not_found', `source ${q(name)} not found`);
      ctx.set(SOURCE, source);
    },

    /** The admin API's registry named in the path; 404 when it does not exist or the caller may not access it. */
    async loadScopedRegistry(ctx: Context): Promise<void> {
      const name = param(ctx, 'name');
      const registry = await store.registries.get(name);
      if (registry === null || !canAccess(callerOf(ctx), registry.claims)) throw new GatewayError('not_found', `registry ${q(name)} not found`);
      ctx.set(REGISTRY, registry);
    },

    /** The JSON body: 415 when it is not declared JSON, 413 over the cap, 400 when it does not parse or cannot be stored. */
    async readJsonBody(ctx: Context): Promise<void> {
      const type = ctx.header('content-type');
      const mediaType = type?.split(';', 1)[0]!.trim().toLowerCase();
      if (mediaType !== 'application/json' && !mediaType?.endsWith('+json')) {
        throw new GatewayError('unsupported_media_type', `the body must be JSON sent with Content-Type: application/json (got ${type === undefined ? 'no Content-Type' : q(type)})`);
      }
      const body = await readBody(ctx.req, deps.maxBodyBytes);
      let value: unknown;
      try {
        value = JSON.parse(body.toString('utf8'));
      } catch (err) {
        throw registryError('malformed_json', `the body is not valid JSON: ${(err as Error).message}`);
      }
      const problem = jsonValueProblem(value);
      if (problem !== null) throw new GatewayError('invalid_request', `the body cannot be stored: ${problem}`);
      ctx.set(BODY, value);
    },
  };
}
