/**
 * Clearer errors for the unions of a JSON schema whose branches are told apart by a `type`
 * property (server.json's arguments and transports). Validating `anyOf: [A, B]` reports the
 * errors of EVERY branch: a `stdio` package transport with a bad field would also "have to be
 * sse" and "need a url". This rewrites each such union into an equivalent form in which only the
 * branch the value's `type` names reports:
 *
 *   anyOf: [A, B]  →  allOf: [{type: object, required: [type], properties: {type: {enum: [a, b]}}},
 *                             {if: {type: object, required: [type], properties: {type: {enum: [a]}}}, then: A},
 *                             {if: …b…, then: B}]
 *
 * It is the same language because every branch is an object that requires `type` among its own
 * values, and the branches' values do not overlap; a union that is not of that form is left as it
 * is. The schema given is not modified.
 */

type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Resolves a local `$ref` (`#/definitions/X`, `#/components/schemas/X`) against `root`. */
function resolve(root: Schema, schema: Schema): Schema | null {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  if (!ref.startsWith('#/')) return null;
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    if (!isSchema(node)) return null;
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return isSchema(node) ? node : null;
}

/**
 * The `type` values an object must have to match `schema`, when the schema says so: it requires
 * `type` and restricts it to an enum or const of strings (directly, in one of its `allOf`
 * members, or as the union of a nested discriminated `anyOf`); null otherwise.
 */
function discriminator(root: Schema, schema: Schema, depth = 0): string[] | null {
  if (depth > 16) return null;
  const node = resolve(root, schema);
  if (node === null) return null;
  const required = Array.isArray(node.required) && node.required.includes('type');
  const type = isSchema(node.properties) && isSchema(node.properties.type) ? node.properties.type : null;
  if (required && type !== null) {
    if (typeof type.const === 'string') return [type.const];
    if (Array.isArray(type.enum) && type.enum.length > 0 && type.enum.every((v) => typeof v === 'string')) return type.enum as string[];
  }
  if (Array.isArray(node.allOf)) {
    for (const member of node.allOf) {
      if (!isSchema(member)) continue;
      const values = discriminator(root, member, depth + 1);
      if (values !== null) return values;
    }
  }
  if (Array.isArray(node.anyOf)) {
    const all: string[] = [];
    for (const branch of node.anyOf) {
      const values = isSchema(branch) ? discriminator(root, branch, depth + 1) : null;
      if (values === null) return null;
      all.push(...values);
    }
    return all;
  }
  return null;
}

/** Whether the object `schema` describes is required to be an object (so `required` binds). */
function requiresObject(root: Schema, schema: Schema, depth = 0): boolean {
  if (depth > 16) return false;
  const node = resolve(root, schema);
  if (node === null) return false;
  if (node.type === 'object') return true;
  if (Array.isArray(node.allOf) && node.allOf.some((m) => isSchema(m) && requiresObject(root, m, depth + 1))) return true;
  return Array.isArray(node.anyOf) && node.anyOf.length > 0 && node.anyOf.every((b) => isSchema(b) && requiresObject(root, b, depth + 1));
}

function typeIn(values: readonly string[]): Schema {
  return { type: 'object', required: ['type'], properties: { type: { enum: [...values] } } };
}

/** The union rewritten, or null when it is not a discriminated union. */
function rewriteUnion(root: Schema, branches: readonly unknown[]): Schema[] | null {
  if (branches.length < 2) return null;
  const seen = new Set<string>();
  const parts: Schema[] = [];
  for (const branch of branches) {
    if (!isSchema(branch) || !requiresObject(root, branch)) return null;
    const values = discriminator(root, branch);
    if (values === null || values.some((v) => seen.has(v))) return null;
    for (const v of values) seen.add(v);
    parts.push({ if: typeIn(values), then: branch });
  }
  return [typeIn([...seen]), ...parts];
}

/** A copy of `schema` with every discriminated `anyOf` rewritten (see the file comment). */
export function withExplicitDiscriminators<T extends object>(schema: T): T {
  const root = structuredClone(schema) as Schema;
  // Discriminators are read from the original, so that rewriting one union never hides another's.
  const original = schema as unknown as Schema;
  const visit = (node: unknown, source: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, (source as unknown[])[i]));
      return;
    }
    if (!isSchema(node) || !isSchema(source)) return;
    for (const key of Object.keys(node)) visit(node[key], source[key]);
    if (Array.isArray(source.anyOf)) {
      const rewritten = rewriteUnion(original, source.anyOf);
      if (rewritten !== null) {
        const branches = node.anyOf as unknown[];
        delete node.anyOf;
        // The branches keep their own (already rewritten) copies.
        rewritten.forEach((part, i) => {
          if (i > 0) part.then = branches[i - 1];
        });
        node.allOf = Array.isArray(node.allOf) ? [...(node.allOf as unknown[]), ...rewritten] : rewritten;
      }
    }
  };
  visit(root, original);
  return root as T;
}
