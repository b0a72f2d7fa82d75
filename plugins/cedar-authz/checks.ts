/**
 * Cedar's checks of an authorization config's text, for validation (the core's
 * `AuthzPolicyChecks`, given to it by the composition root): each policy parsed alone (a problem
 * at its character), the entity store parsed, and the entity types and actions the policies name
 * checked against ToolHive's vocabulary with Cedar's validator.
 *
 * **Unknown entity types and actions are refused**, with Cedar's did-you-mean: a type or action no
 * request has makes its policy dead, silently (a `forbid` on `Action::"call_tools"` never forbids
 * anything). The vocabulary is ToolHive's: `Client`, `Action`, `Tool`, `Prompt`, `Resource`,
 * `MCP`, `FeatureType`, the group entity type, the types of the entity store; actions
 * `call_tool`, `get_prompt`, `read_resource`, and `list_tools`, `list_prompts`,
 * `list_resources`. The last three (and `FeatureType`) are ToolHive's too, and ToolHive's own
 * configurations carry them, but no request of a virtual MCP server has them (lists are filtered
 * per item): they are accepted, and the plugin warns of them when it starts (`listPolicies`).
 */
import { checkParsePolicySet, validate, type PolicyJson, type SchemaJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { AuthzPolicyChecks, AuthzPolicySet, AuthzTextProblem } from '@gatehouse-mcp/gateway';
import { checkPolicies, parseEntities, policyId, utf16Offset } from './policies.ts';

/** The actions of ToolHive's requests: the per-item ones a virtual MCP server decides with. */
export const ITEM_ACTIONS = ['call_tool', 'get_prompt', 'read_resource'] as const;
/** ToolHive's list actions (`authorizeFeatureList`), on `FeatureType::"tool"` etc.: never asked by a virtual MCP server. */
export const LIST_ACTIONS = ['list_tools', 'list_prompts', 'list_resources'] as const;
/** The entity types of ToolHive's requests, besides the group entity type and the entity store's. */
const REQUEST_TYPES = ['Client', 'Tool', 'Prompt', 'Resource', 'MCP', 'FeatureType'];

/** `Namespace::Type` → [namespace, type]; a type without `::` is in the empty namespace. */
function splitType(type: string): [string, string] {
  const at = type.lastIndexOf('::');
  return at === -1 ? ['', type] : [type.slice(0, at), type.slice(at + 2)];
}

/** The entity types an entity store names (its entities' and their parents'), Action's left out. */
function storeTypes(entitiesJson: string): string[] {
  const parsed = parseEntities(entitiesJson);
  if (!parsed.ok) return [];
  const types = new Set<string>();
  for (const entity of parsed.entities) {
    for (const uid of [entity.uid, ...(entity.parents ?? [])]) {
      const plain = (typeof uid === 'object' && uid !== null && '__entity' in uid ? uid.__entity : uid) as { type?: unknown };
      if (typeof plain.type === 'string' && plain.type !== 'Action') types.add(plain.type);
    }
  }
  return [...types];
}

/**
 * A Cedar schema of ToolHive's vocabulary: its entity types (no hierarchy, no attributes: only
 * names are judged with it) and its actions, each on its resource type.
 */
function vocabularySchema(groupEntityType: string, entitiesJson: string): SchemaJson<string> {
  const namespaces: Record<string, { entityTypes: Record<string, object>; actions: Record<string, object> }> = { '': { entityTypes: {}, actions: {} } };
  for (const type of new Set([...REQUEST_TYPES, groupEntityType, ...storeTypes(entitiesJson)])) {
    const [namespace, name] = splitType(type);
    (namespaces[namespace] ??= { entityTypes: {}, actions: {} }).entityTypes[name] = {};
  }
  const appliesTo = (resource: string) => ({ appliesTo: { principalTypes: ['Client'], resourceTypes: [resource] } });
  Object.assign(namespaces['']!.actions, {
    call_tool: appliesTo('Tool'),
    get_prompt: appliesTo('Prompt'),
    read_resource: appliesTo('Resource'),
    list_tools: appliesTo('FeatureType'),
    list_prompts: appliesTo('FeatureType'),
    list_resources: appliesTo('FeatureType'),
  });
  return namespaces as unknown as SchemaJson<string>;
}

const UNRECOGNIZED = /unrecognized (entity type|action)/;
const POLICY_PREFIX = /^for policy `[^`]*`, /;

/** The entity types and actions the policies name that no request has, each at its place in its policy. */
function vocabularyProblems(set: AuthzPolicySet, parsed: readonly number[]): AuthzTextProblem[] {
  const policies = Object.fromEntries(parsed.map((index) => [policyId(index), set.policies[index]!]));
  let answer: ReturnType<typeof validate>;
  try {
    answer = validate({ validationSettings: { mode: 'strict' }, schema: vocabularySchema(set.groupEntityType, set.entitiesJson), policies: { staticPolicies: policies } });
  } catch {
    return []; // a schema Cedar cannot take (an odd store type): the names are not judged
  }
  if (answer.type !== 'success') return [];
  const problems: AuthzTextProblem[] = [];
  for (const { policyId: id, error } of answer.validationErrors) {
    if (!UNRECOGNIZED.test(error.message)) continue; // only names are judged here: attributes are open (claim_*, arg_*)
    const index = set.policies.findIndex((_, i) => policyId(i) === id);
    if (index === -1) continue;
    const start = error.sourceLocations?.[0]?.start;
    const offset = start === undefined ? null : utf16Offset(set.policies[index]!, start);
    const help = error.help ? ` (${error.help})` : '';
    const known = error.message.includes('unrecognized action')
      ? `requests have ${ITEM_ACTIONS.join(', ')}; ToolHive's ${LIST_ACTIONS.join(', ')} are accepted`
      : `requests have ${[...REQUEST_TYPES, set.groupEntityType].join(', ')} and the entity store's types`;
    problems.push({ target: { policy: index }, offset, message: `${error.message.replace(POLICY_PREFIX, '')}${help}: no request has it, so the policy would never apply (${known})` });
  }
  return problems;
}

/** ToolHive's `validateGroupEntityType`: the policy it parses with the type. */
function entityTypeProblem(type: string): string | null {
  if (checkParsePolicySet({ staticPolicies: `permit(principal in ${type}::"x", action, resource);` }).type === 'success') return null;
  return `must be a Cedar identifier such as THVGroup (letters, digits, "_", not starting with a digit, not a reserved word) (got ${JSON.stringify(type)})`;
}

/** The core's `AuthzPolicyChecks`, with Cedar. */
export const cedarPolicyChecks: AuthzPolicyChecks = {
  check(set) {
    const problems: AuthzTextProblem[] = checkPolicies(set.policies).map((p) => ({ target: { policy: p.index ?? 0 }, offset: p.offset, message: p.message }));
    const store = parseEntities(set.entitiesJson);
    if (!store.ok) for (const p of store.problems) problems.push({ target: 'entitiesJson', offset: p.offset, message: p.message });
    // The names of the policies that parse are judged once the store's types are known.
    const parsed = set.policies.map((_, index) => index).filter((index) => !problems.some((p) => p.target !== 'entitiesJson' && p.target.policy === index));
    if (store.ok && parsed.length > 0 && entityTypeProblem(set.groupEntityType) === null) problems.push(...vocabularyProblems(set, parsed));
    return problems;
  },
  entityType: entityTypeProblem,
};

/** The indexes of the policies that name a list action or `FeatureType`: ToolHive's, never asked by a virtual MCP server. */
export function listPolicies(policies: readonly PolicyJson[]): number[] {
  const names = (value: unknown): boolean => {
    if (Array.isArray(value)) return value.some(names);
    if (typeof value !== 'object' || value === null) return false;
    const node = value as Record<string, unknown>;
    if (node.type === 'FeatureType' || node.entity_type === 'FeatureType') return true;
    if (node.type === 'Action' && typeof node.id === 'string' && (LIST_ACTIONS as readonly string[]).includes(node.id)) return true;
    return Object.values(node).some(names);
  };
  return policies.flatMap((policy, index) => (names(policy) ? [index] : []));
}
