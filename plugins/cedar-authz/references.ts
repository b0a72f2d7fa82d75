/**
 * What a policy set reads of a request, found by walking the policies' JSON form (Cedar's AST):
 * the attributes it names (`claim_*`, `claimset_*`, `arg_*`, wherever they are read: principal,
 * context or resource), whether it reads the whole context record, and whether it can tell one
 * principal from another by its id. The decision cache keys a decision by these alone, so that a
 * refreshed token (a new `exp`, `iat`, `jti`) finds the decision of the one before.
 */
import type { Expr, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';

export interface PolicyReferences {
  /** Attribute names read with `.`, `[...]` or `has`, anywhere. */
  readonly attributes: ReadonlySet<string>;
  /** Some policy uses `context` as a value (not only to read an attribute): every claim and argument counts. */
  readonly wholeContext: boolean;
  /** Some policy may compare the principal's id (`principal == Client::"x"`, `principal` as a value). */
  readonly principalId: boolean;
  /** Some policy reads an argument (`arg_*`): a call's decision depends on its arguments. */
  readonly arguments: boolean;
}

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The entity type of an entity literal (`{Value: {__entity: {type, id}}}`), else null. */
function literalEntityType(expr: unknown): string | null {
  if (!isNode(expr) || !isNode(expr.Value)) return null;
  const entity = isNode(expr.Value.__entity) ? expr.Value.__entity : expr.Value;
  return typeof entity.type === 'string' ? entity.type : null;
}

const isVar = (expr: unknown, name: string): boolean => isNode(expr) && expr.Var === name;

class Walker {
  readonly attributes = new Set<string>();
  wholeContext = false;
  principalId = false;

  expr(expr: unknown): void {
    if (Array.isArray(expr)) {
      for (const item of expr) this.expr(item);
      return;
    }
    if (!isNode(expr)) return;
    if (expr.Var === 'context') this.wholeContext = true;
    if (expr.Var === 'principal') this.principalId = true;
    for (const [op, body] of Object.entries(expr)) {
      if (op === 'Value' || op === 'Var') continue;
      // A record literal's keys are the user's words, not operators: only its values are expressions.
      if (op === 'Record' && isNode(body)) this.expr(Object.values(body));
      else if ((op === '.' || op === 'has') && isNode(body)) this.read(body);
      else if (op === 'in' && isNode(body) && isVar(body.left, 'principal')) this.principalIn(body);
      else if (op === 'is' && isNode(body) && isVar(body.left, 'principal')) this.expr(body.in === undefined ? [] : { in: { left: body.left, right: body.in } });
      else this.expr(body);
    }
  }

  /** `x.attr` / `x has attr`: the attribute is read; `x` itself is not used as a value when it is a variable. */
  read(body: Node): void {
    const attrs = Array.isArray(body.attr) ? body.attr : [body.attr];
    for (const attr of attrs) if (typeof attr === 'string') this.attributes.add(attr);
    if (!isVar(body.left, 'context') && !isVar(body.left, 'principal') && !isVar(body.left, 'resource')) this.expr(body.left);
  }

  /** `principal in E`: the principal's ancestors count, its id only when E may be a Client (another type's entity is never the principal). */
  principalIn(body: Node): void {
    const type = literalEntityType(body.right);
    if (type === null || type === 'Client') this.principalId = true;
    if (type === null) this.expr(body.right);
  }

  scope(policy: PolicyJson): void {
    const principal = policy.principal as Node;
    if (principal.op === '==') this.principalId = true;
    if (principal.op === 'in' || (principal.op === 'is' && principal.in !== undefined)) {
      const target = (principal.op === 'in' ? principal : principal.in) as Node;
      const entity = isNode(target.entity) ? target.entity : null;
      const type = entity === null ? null : isNode(entity.__entity) ? entity.__entity.type : entity.type;
      if (type !== undefined && (type === null || type === 'Client')) this.principalId = true;
    }
  }
}

/** What `policies` read of a request. */
export function policyReferences(policies: readonly PolicyJson[]): PolicyReferences {
  const walker = new Walker();
  for (const policy of policies) {
    walker.scope(policy);
    for (const condition of policy.conditions) walker.expr(condition.body as Expr);
  }
  const attributes = walker.attributes;
  return {
    attributes,
    wholeContext: walker.wholeContext,
    principalId: walker.principalId,
    arguments: walker.wholeContext || [...attributes].some((name) => name.startsWith('arg_')),
  };
}
