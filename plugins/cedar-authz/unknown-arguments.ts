/**
 * The list decision when policies read arguments: whether some arguments could let the caller use
 * an item. ToolHive's vMCP filters a list by the decision without arguments, so a tool whose
 * permit reads an argument (ToolHive's documented `resource.arg_operation == "add"`) is left out
 * of `tools/list` (the read errors, or is false, without arguments), yet a call with the right
 * arguments goes through. Gatehouse answers a call of an item the caller does not see as the
 * unknown item's, so such a tool would be unusable: an item is seen when some arguments could
 * permit it, and each call is decided with its arguments.
 *
 * Cedar's partial evaluation decides it. Every read of an `arg_*` attribute of the resource or
 * the context (`.arg_x`, `has arg_x`) is made an unknown in a copy of the policies, and the
 * request carries no arguments: the answer is `allow`, `deny` (whatever the arguments), or a
 * residual that depends on them (seen). A policy that uses `context` as a whole value cannot be
 * rewritten so: then the decision without arguments stands, as in ToolHive.
 */
import { isAuthorizedPartial, type EntityJson, type PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { CedarAction, CedarRequest } from './request.ts';

type Node = Record<string, unknown>;
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);
const isArgumentRead = (body: unknown): body is Node => {
  if (!isNode(body) || !isNode(body.left) || (body.left.Var !== 'resource' && body.left.Var !== 'context')) return false;
  const attr = Array.isArray(body.attr) ? body.attr[0] : body.attr;
  return typeof attr === 'string' && attr.startsWith('arg_');
};

/** `expr` with every argument read an unknown (`has arg_x` and `.arg_x` are distinct unknowns). */
function unknownArguments(expr: unknown): unknown {
  if (Array.isArray(expr)) return expr.map(unknownArguments);
  if (!isNode(expr)) return expr;
  for (const op of ['.', 'has'] as const) {
    const body = expr[op];
    if (isArgumentRead(body)) {
      const attr = Array.isArray(body.attr) ? body.attr.join('.') : String(body.attr);
      return { unknown: [{ Value: op === 'has' ? `has ${attr}` : attr }] };
    }
  }
  const out: Node = {};
  for (const [key, value] of Object.entries(expr)) out[key] = key === 'Value' ? value : unknownArguments(value);
  return out;
}

/** Whether an expression reads an argument. */
function readsArgument(expr: unknown): boolean {
  if (Array.isArray(expr)) return expr.some(readsArgument);
  if (!isNode(expr)) return false;
  if (isArgumentRead(expr['.']) || isArgumentRead(expr.has)) return true;
  return Object.entries(expr).some(([key, value]) => key !== 'Value' && readsArgument(value));
}

const uidOf = (entity: unknown): { type: unknown; id: unknown } | null => {
  if (!isNode(entity)) return null;
  const plain = isNode(entity.__entity) ? entity.__entity : entity;
  return { type: plain.type, id: plain.id };
};

/** Whether a policy's scope can match `action` on a resource of `type` and `id` (unsure forms, such as `in`, can). */
function scopeMatches(policy: PolicyJson, action: CedarAction, type: string, id: string): boolean {
  const a = policy.action as Node;
  if (a.op === '==' && uidOf(a.entity)?.id !== action) return false;
  if (a.op === 'in' && Array.isArray(a.entities) && !a.entities.some((e) => uidOf(e)?.id === action)) return false;
  const r = policy.resource as Node;
  if (r.op === '==') {
    const uid = uidOf(r.entity);
    return uid === null || (uid.type === type && uid.id === id);
  }
  if (r.op === 'is') return r.entity_type === type;
  return true;
}

export interface UnknownArguments {
  /** Whether an item's decision may depend on arguments: some policy reading one has a scope that can match it. */
  mayDependOn(action: CedarAction, type: string, id: string): boolean;
  /** `allow` or `deny` whatever the arguments, or `maybe`; `deny` when Cedar refuses (`onError` is told) or a policy errors. */
  decide(request: CedarRequest, entities: EntityJson[], onError: (reason: string) => void): 'allow' | 'deny' | 'maybe';
}

/** The rewritten policies, or null when a policy uses the context as a whole value (the decision without arguments then stands). */
export function unknownArgumentPolicies(policies: readonly PolicyJson[], wholeContext: boolean): UnknownArguments | null {
  if (wholeContext) return null;
  const readers = policies.filter((policy) => policy.conditions.some((condition) => readsArgument(condition.body)));
  const rewritten = Object.fromEntries(
    policies.map((policy, index) => [`policy${index}`, { ...policy, conditions: policy.conditions.map((c) => ({ ...c, body: unknownArguments(c.body) })) } as PolicyJson]),
  );
  return {
    mayDependOn: (action, type, id) => readers.some((policy) => scopeMatches(policy, action, type, id)),
    decide(request, entities, onError) {
      try {
        const answer = isAuthorizedPartial({
          principal: request.principal,
          action: request.action,
          resource: request.resource,
          context: request.context,
          policies: { staticPolicies: rewritten },
          entities,
        });
        if (answer.type === 'failure') {
          onError(`the request was refused: ${answer.errors.map((e) => e.message).join('; ')}`);
          return 'deny';
        }
        const { decision, errored } = answer.response;
        // As in ToolHive, an error in any policy denies (it is one whatever the arguments: their reads are unknowns).
        if (errored.length > 0) return 'deny';
        return decision === 'allow' ? 'allow' : decision === 'deny' ? 'deny' : 'maybe';
      } catch (err) {
        onError(`cedar-wasm threw: ${err instanceof Error ? err.message : String(err)}`);
        return 'deny';
      }
    },
  };
}
