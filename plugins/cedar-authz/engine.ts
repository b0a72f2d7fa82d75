/**
 * The Cedar authorizer: ToolHive's decision for one MCP operation by one caller, with a bounded
 * cache of decisions.
 *
 * A decision is Cedar's over ToolHive's request (request.ts): default deny, a `forbid` wins, and,
 * as in ToolHive (`IsAuthorized`: any diagnostic error fails the request), an error while
 * evaluating *any* policy denies, where Cedar itself would skip the erroring policy. So a permit
 * on `principal.claim_roles` denies every request of a token without `roles` unless guarded with
 * `principal has claim_roles`. A request Cedar cannot take, or a caller without a `sub`, is a deny.
 *
 * The cache (lru-cache, `cacheSize` decisions) keys a decision by what the policies can read of
 * the request (references.ts): action and resource (and the tool's annotations), the claims the
 * policies name, the group parents, the subject only when a policy can compare it, the arguments
 * only when a policy reads them. A refreshed token (new `exp`, `iat`, `jti`) keeps its decisions
 * unless a policy reads those claims or the whole `context`. What the policies can read of a
 * caller is worked out once per claims object (a token's claims are one object for as long as the
 * token is cached): its part of the key, and `callerKey`, a digest of it that a view keys on.
 *
 * `listDecision` is the decision of a list's entry: without arguments, as ToolHive decides it,
 * except that an item some arguments could permit is allowed (unknown-arguments.ts).
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { statefulIsAuthorized, type EntityJson, type EntityUidJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { CedarAuthzSettings } from './config.ts';
import { checkPolicies, describePolicyProblem, parseEntities, policiesAsJson, preparePolicySet } from './policies.ts';
import { policyReferences, type PolicyReferences } from './references.ts';
import { buildRequest, principalGroups, subjectOf, type CedarAction, type CedarRequest, type ClaimMapping, type ToolAnnotations } from './request.ts';
import { unknownArgumentPolicies } from './unknown-arguments.ts';

export type Decision = 'allow' | 'deny';

/** Who asks: what the gateway's `Principal` carries (ToolHive reads only the token's claims). */
export interface CedarCaller {
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface CedarAuthorizerOptions {
  /**
   * Decisions kept (least recently used dropped first): at most this many, whose keys total at
   * most 256 characters each on average. 0 turns the cache off. Default 10,000.
   */
  readonly cacheSize?: number;
  /** Told why a request was denied by an error (a policy's evaluation error, a request Cedar refused). */
  readonly onError?: (reason: string) => void;
}

export interface CedarAuthorizer {
  /**
   * ToolHive's decision on `action` on `resource` (a tool or prompt name, a resource URI) by
   * `caller`, with the call's `args` (none for a list's per-item decision) and, for a tool, the
   * annotations its server lists.
   */
  decide(caller: CedarCaller, action: CedarAction, resource: string, args?: Readonly<Record<string, unknown>> | null, annotations?: ToolAnnotations): Decision;
  /**
   * The decision of a list's entry: `decide` without arguments (ToolHive's list filter), except
   * that when policies read arguments an item that some arguments could permit is allowed (its
   * calls are then decided with theirs). Resources have no arguments: their decision is `decide`'s.
   */
  listDecision(caller: CedarCaller, action: CedarAction, resource: string, annotations?: ToolAnnotations): Decision;
  /**
   * What the policies can read of `caller` as a short digest: two callers with one key get the
   * same decisions (`listDecision`, and `decide` with the same arguments). Kept per claims object.
   */
  callerKey(caller: CedarCaller): string;
  /** Some policy reads an argument: a call's decision can differ from its list entry's (no arguments). */
  readonly referencesArguments: boolean;
  /** Whether a call's arguments can change the decision of `action` on `resource`: a policy that reads one has a scope that can match it. */
  dependsOnArguments(action: CedarAction, resource: string): boolean;
  /** The preparsed set's id in the wasm instance (a digest of the policies). */
  readonly policySetId: string;
  /** How many decisions the cache holds. */
  readonly cachedDecisions: number;
}

/** The entity type of each action's resource. */
const RESOURCE_TYPES: Readonly<Record<CedarAction, string>> = { call_tool: 'Tool', get_prompt: 'Prompt', read_resource: 'Resource' };

/** A key longer than this is not cached (a huge argument or claim must not fill memory). */
const MAX_KEY_LENGTH = 4096;

const uidKey = (uid: EntityUidJson): string => {
  const plain = '__entity' in uid ? uid.__entity : uid;
  return `${plain.type}\u0000${plain.id}`;
};

/** What the policies can read of one caller: its part of a decision's key (null: not worth caching), and the digest of it. */
interface CallerPart {
  readonly sub: string;
  readonly key: string | null;
  readonly digest: string;
}

/** JSON of `value`, or null when it cannot be written (a value nested past the stack: decided, not cached). */
function json(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    return null;
  }
}

/** The parts of a caller the policies can read: the subject when a policy compares it, the group parents, the claims they name (all of them when a policy reads the whole context). */
function callerPart(refs: PolicyReferences, mapping: ClaimMapping, claims: Readonly<Record<string, unknown>>, sub: string): CallerPart {
  const parts: unknown[] = [refs.principalId ? sub : null, principalGroups(claims, mapping).sort()];
  if (refs.wholeContext) parts.push(claims);
  else {
    for (const name of refs.attributes) {
      if (name.startsWith('claim_')) parts.push(claims[name.slice(6)]);
      else if (name.startsWith('claimset_')) parts.push(claims[name.slice(9)]);
    }
  }
  const key = json(parts);
  const digest = createHash('sha256').update(key ?? `uncached\u0000${sub}\u0000${Math.random()}`).digest('base64url').slice(0, 22);
  return { sub, key: key !== null && key.length <= MAX_KEY_LENGTH ? key : null, digest };
}

/** The parts of a request the policies can read, as one string; null when not worth caching. */
function cacheKey(refs: PolicyReferences, caller: CallerPart, kind: 'call' | 'list', action: CedarAction, resource: string, args: Readonly<Record<string, unknown>> | null | undefined, annotations: ToolAnnotations | undefined): string | null {
  if (caller.key === null) return null;
  const parts: unknown[] = [kind, action, resource];
  if (action === 'call_tool' && annotations !== undefined) {
    parts.push([annotations.readOnlyHint, annotations.destructiveHint, annotations.idempotentHint, annotations.openWorldHint]);
  }
  if (refs.wholeContext) parts.push(args ?? null);
  else if (refs.arguments && args) {
    const read = Object.keys(args).filter((k) => refs.attributes.has(`arg_${k}`) || refs.attributes.has(`arg_${k}_present`)).sort();
    parts.push(read.map((k) => [k, args[k]]));
  }
  const own = json(parts);
  if (own === null) return null;
  const key = own + caller.key;
  return key.length > MAX_KEY_LENGTH ? null : key;
}

/** The static entities, and the request's, the request's winning on the same uid (ToolHive merges them so). */
function mergeEntities(store: readonly EntityJson[], storeKeys: ReadonlySet<string>, request: EntityJson[]): EntityJson[] {
  const requestKeys = request.map((entity) => uidKey(entity.uid));
  if (!requestKeys.some((key) => storeKeys.has(key))) return [...request, ...store];
  return [...request, ...store.filter((entity) => !requestKeys.includes(uidKey(entity.uid)))];
}

/**
 * A Cedar authorizer for `settings` (checked: a policy or entity problem throws, listing all of
 * them; a config validated by config.ts has none).
 */
export function createCedarAuthorizer(settings: CedarAuthzSettings, options: CedarAuthorizerOptions = {}): CedarAuthorizer {
  const problems = checkPolicies(settings.policies);
  const store = parseEntities(settings.entitiesJson);
  if (!store.ok) problems.push(...store.problems);
  if (problems.length > 0 || !store.ok || settings.policies.length === 0) {
    const lines = problems.map((p) => `${p.index === null ? 'entitiesJson' : `policies[${p.index}]`}: ${describePolicyProblem(p)}`);
    throw new Error(`invalid Cedar authorization config: ${settings.policies.length === 0 ? 'no policies' : lines.join('; ')}`);
  }
  const policySetId = preparePolicySet(settings.policies);
  const policyJson = policiesAsJson(settings.policies);
  const refs = policyReferences(policyJson);
  const storeKeys = new Set(store.entities.map((entity) => uidKey(entity.uid)));
  const mapping: ClaimMapping = settings;
  // Only the claims and arguments the policies name are sent to Cedar (it reads attributes by
  // name only, so no decision changes); all of them when a policy uses the context as a whole.
  const only = refs.wholeContext ? null : refs.attributes;
  const cacheSize = options.cacheSize ?? 10_000;
  // Bounded by count and by the keys' total length (a key is at most MAX_KEY_LENGTH characters).
  const cache = cacheSize > 0 ? new LRUCache<string, Decision>({ max: cacheSize, maxSize: cacheSize * 256, sizeCalculation: (_, key) => key.length + 1 }) : null;
  const onError = options.onError ?? (() => {});
  const unknownArguments = refs.arguments ? unknownArgumentPolicies(policyJson, refs.wholeContext) : null;
  /** Per claims object: what the policies read of it (null: no subject, every request denied). */
  const callers = new WeakMap<object, CallerPart | null>();
  const partOf = (claims: Readonly<Record<string, unknown>>): CallerPart | null => {
    let part = callers.get(claims);
    if (part === undefined) {
      const sub = subjectOf(claims);
      part = sub === null ? null : callerPart(refs, mapping, claims, sub);
      callers.set(claims, part);
    }
    return part;
  };

  const cached = (key: string | null, decideNow: () => Decision): Decision => {
    if (key !== null) {
      const known = cache?.get(key);
      if (known !== undefined) return known;
    }
    const decision = decideNow();
    if (key !== null) cache?.set(key, decision);
    return decision;
  };

  /** A list entry that arguments may permit: Cedar's partial evaluation with the arguments unknown. */
  const mayBeAllowed = (claims: Readonly<Record<string, unknown>>, action: CedarAction, resource: string, annotations: ToolAnnotations | undefined): Decision => {
    const request = buildRequest(mapping, claims, action, resource, null, annotations, only);
    if (request === null || unknownArguments === null) return 'deny';
    return unknownArguments.decide(request, mergeEntities(store.entities, storeKeys, request.entities), onError) === 'deny' ? 'deny' : 'allow';
  };

  const evaluate = (claims: Readonly<Record<string, unknown>>, action: CedarAction, resource: string, args: Readonly<Record<string, unknown>> | null | undefined, annotations: ToolAnnotations | undefined): Decision => {
    const request: CedarRequest | null = buildRequest(mapping, claims, action, resource, args, annotations, only);
    if (request === null) return 'deny';
    try {
      const answer = statefulIsAuthorized({
        principal: request.principal,
        action: request.action,
        resource: request.resource,
        context: request.context,
        entities: mergeEntities(store.entities, storeKeys, request.entities),
        preparsedPolicySetId: policySetId,
      });
      if (answer.type === 'failure') {
        onError(`the request was refused: ${answer.errors.map((e) => e.message).join('; ')}`);
        return 'deny';
      }
      const { decision, diagnostics } = answer.response;
      if (diagnostics.errors.length > 0) {
        onError(diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`).join('; '));
        return 'deny';
      }
      return decision === 'allow' ? 'allow' : 'deny';
    } catch (err) {
      onError(`cedar-wasm threw: ${err instanceof Error ? err.message : String(err)}`);
      return 'deny';
    }
  };

  return {
    policySetId,
    referencesArguments: refs.arguments,
    get cachedDecisions() {
      return cache?.size ?? 0;
    },
    decide(caller, action, resource, args, annotations) {
      const part = partOf(caller.claims);
      if (part === null) return 'deny';
      const key = cache === null ? null : cacheKey(refs, part, 'call', action, resource, args, annotations);
      return cached(key, () => evaluate(caller.claims, action, resource, args, annotations));
    },
    dependsOnArguments(action, resource) {
      if (!refs.arguments) return false;
      return unknownArguments === null || unknownArguments.mayDependOn(action, RESOURCE_TYPES[action], resource);
    },
    listDecision(caller, action, resource, annotations) {
      const without = this.decide(caller, action, resource, null, annotations);
      // A resource is read without arguments (resources/read has none).
      if (without === 'allow' || unknownArguments === null || action === 'read_resource') return without;
      if (!unknownArguments.mayDependOn(action, RESOURCE_TYPES[action], resource)) return without;
      const part = partOf(caller.claims)!;
      const key = cache === null ? null : cacheKey(refs, part, 'list', action, resource, null, annotations);
      return cached(key, () => mayBeAllowed(caller.claims, action, resource, annotations));
    },
    callerKey(caller) {
      return partOf(caller.claims)?.digest ?? 'no-subject';
    },
  };
}
