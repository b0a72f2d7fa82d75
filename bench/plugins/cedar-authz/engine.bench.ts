/**
 * One Cedar decision (plugins/cedar-authz/engine.ts) on a ToolHive-shaped request: 10 policies
 * (ToolHive's documented kinds: a tool to everyone, a role claim, a group through the entity
 * store, an argument condition, a forbid), a token of 9 claims with groups and roles, a 3-entity
 * static store.
 *
 * - cached: the decision found in the cache (the key built from the claims the policies read).
 * - uncached: the whole evaluation (request built, entities merged, statefulIsAuthorized on the
 *   preparsed set), the cache turned off.
 * - the request alone (buildRequest), the part of the uncached figure that is ours: with the
 *   claims the policies read (what the engine sends) and with every claim (ToolHive's request).
 */
import type { Bench } from 'tinybench';
import { createCedarAuthorizer } from '../../../plugins/cedar-authz/engine.ts';
import { policiesAsJson } from '../../../plugins/cedar-authz/policies.ts';
import { policyReferences } from '../../../plugins/cedar-authz/references.ts';
import { buildRequest } from '../../../plugins/cedar-authz/request.ts';
import type { CedarAuthzSettings } from '../../../plugins/cedar-authz/config.ts';

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

const POLICIES = [
  'permit(principal, action == Action::"call_tool", resource == Tool::"weather");',
  'permit(principal, action == Action::"call_tool", resource) when { principal has claim_roles && principal.claim_roles.contains("admin") };',
  'permit(principal in THVRole::"developer", action == Action::"call_tool", resource == Tool::"deploy");',
  'permit(principal in THVGroup::"engineering", action == Action::"get_prompt", resource);',
  'permit(principal, action == Action::"call_tool", resource == Tool::"calculator") when { resource has arg_operation && (resource.arg_operation == "add" || resource.arg_operation == "subtract") };',
  'permit(principal, action == Action::"read_resource", resource == Resource::"file:///docs/readme.md");',
  'permit(principal, action == Action::"call_tool", resource in MCP::"github") when { principal has claim_email && principal.claim_email like "*@example.com" };',
  'permit(principal, action == Action::"call_tool", resource == Tool::"search") when { resource.readOnlyHint };',
  'forbid(principal, action == Action::"call_tool", resource == Tool::"delete_repo");',
  'forbid(principal in THVGroup::"contractors", action, resource);',
];

const ENTITIES = JSON.stringify([
  { uid: { type: 'THVGroup', id: 'engineering' }, attrs: {}, parents: [{ type: 'THVRole', id: 'developer' }] },
  { uid: { type: 'THVGroup', id: 'platform' }, attrs: {}, parents: [{ type: 'THVRole', id: 'developer' }] },
  { uid: { type: 'THVRole', id: 'developer' }, attrs: {}, parents: [] },
]);

const SETTINGS: CedarAuthzSettings = {
  policies: POLICIES,
  entitiesJson: ENTITIES,
  groupClaimName: 'groups',
  roleClaimName: 'roles',
  groupEntityType: 'THVGroup',
  multiValuedClaims: [],
  serverName: 'github',
};

const CALLER = {
  claims: {
    sub: 'alice',
    iss: 'https://idp.example.com',
    aud: 'gatehouse',
    exp: 1_900_000_000,
    iat: 1_899_996_400,
    email: 'alice@example.com',
    name: 'Alice',
    groups: ['engineering', 'platform'],
    roles: ['viewer'],
  },
};

export default function register(bench: Bench): void {
  const cached = createCedarAuthorizer(SETTINGS);
  const uncached = createCedarAuthorizer(SETTINGS, { cacheSize: 0 });
  const args = { operation: 'add', a: 1, b: 2 };
  const read = policyReferences(policiesAsJson(POLICIES)).attributes;
  if (cached.decide(CALLER, 'call_tool', 'deploy') !== 'allow') throw new Error('expected the deploy tool to be allowed');
  if (uncached.decide(CALLER, 'call_tool', 'calculator', args) !== 'allow') throw new Error('expected the calculator to be allowed');

  bench
    .add('Cedar decision, cached (10 policies, 9 claims: the key from the claims read)', () => {
      sink = cached.decide(CALLER, 'call_tool', 'deploy');
    })
    .add('Cedar decision, uncached (request + statefulIsAuthorized, preparsed set, 3 static entities)', () => {
      sink = uncached.decide(CALLER, 'call_tool', 'deploy');
    })
    .add('Cedar decision, uncached, a call with 3 arguments', () => {
      sink = uncached.decide(CALLER, 'call_tool', 'calculator', args);
    })
    .add('  part: buildRequest (claims the policies read, groups, entities)', () => {
      sink = buildRequest(SETTINGS, CALLER.claims, 'call_tool', 'deploy', null, undefined, read);
    })
    .add('  part: buildRequest, every claim (ToolHive\'s whole request)', () => {
      sink = buildRequest(SETTINGS, CALLER.claims, 'call_tool', 'deploy');
    });
}
