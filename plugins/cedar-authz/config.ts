/**
 * What a Cedar authorizer is made from. The configuration itself, `spec.incomingAuth.authzConfig`
 * with ToolHive's field names, is the core's (core/config/authz-schema.ts: one schema, read where
 * the YAML is read); it resolves to an `AuthzPolicyConfig` (the policies wherever `type` put
 * them, the claim mapping with ToolHive's defaults), and Cedar's checks of its text are this
 * folder's (checks.ts), given to validation by the composition root.
 */
import type { AuthzPolicyConfig } from '@gatehouse-mcp/gateway';
import type { ClaimMapping } from './request.ts';

/** ToolHive's default group entity type (`EntityTypeTHVGroup`). */
export const DEFAULT_GROUP_ENTITY_TYPE = 'THVGroup';

/** What an authorizer is made from: the policies, the entity store, the claim mapping and the server name. */
export interface CedarAuthzSettings extends ClaimMapping {
  readonly policies: readonly string[];
  readonly entitiesJson: string;
}

/** The settings of a resolved `authzConfig`; `serverName` is the `MCP::"<name>"` parent of every resource (the VirtualMCPServer's name, as ToolHive's vMCP sets it). */
export function settingsOf(config: AuthzPolicyConfig, serverName: string): CedarAuthzSettings {
  return {
    policies: config.policies,
    entitiesJson: config.entitiesJson,
    groupClaimName: config.groupClaimName,
    roleClaimName: config.roleClaimName,
    groupEntityType: config.groupEntityType || DEFAULT_GROUP_ENTITY_TYPE,
    multiValuedClaims: config.multiValuedClaims,
    serverName,
  };
}
