/**
 * Every field a configuration schema accepts, found by walking the zod schema's JSON Schema
 * (zod's own `z.toJSONSchema`, of what a file may contain: its input side): object properties,
 * array items, map values, unions. A field is named with its parent, the nearest field above it
 * (an array's or a map's elements have the array's or the map's field as parent).
 */
import { z } from 'zod';

export interface SchemaField {
  /** Where it is, for messages: `VirtualMCPServer spec.config.session.maxSessions`, `[]` for array items, `*` for map values. */
  readonly path: string;
  readonly name: string;
  /** The field it is in; null at the top of the document. */
  readonly parent: string | null;
}

interface JsonSchemaNode {
  readonly properties?: Record<string, JsonSchemaNode>;
  readonly items?: JsonSchemaNode | readonly JsonSchemaNode[];
  readonly prefixItems?: readonly JsonSchemaNode[];
  readonly additionalProperties?: JsonSchemaNode | boolean;
  readonly anyOf?: readonly JsonSchemaNode[];
  readonly oneOf?: readonly JsonSchemaNode[];
  readonly allOf?: readonly JsonSchemaNode[];
  readonly $ref?: string;
  readonly $defs?: Record<string, JsonSchemaNode>;
}

export function schemaFields(document: string, schema: z.ZodType): SchemaField[] {
  const root = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  const fields = new Map<string, SchemaField>();
  const seen = new Set<JsonSchemaNode>();
  const walk = (node: JsonSchemaNode, path: readonly string[], parent: string | null): void => {
    if (seen.has(node)) return; // a recursive definition
    seen.add(node);
    if (node.$ref !== undefined) {
      const name = /^#\/\$defs\/(.+)$/.exec(node.$ref)?.[1];
      const target = name === undefined ? undefined : root.$defs?.[name];
      if (target !== undefined) walk(target, path, parent);
    }
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const at = [...path, name];
      const key = `${document} ${at.join('.')}`;
      if (!fields.has(key)) fields.set(key, { path: key, name, parent });
      walk(child, at, name);
    }
    const items = node.items === undefined ? [] : Array.isArray(node.items) ? node.items : [node.items as JsonSchemaNode];
    for (const item of [...items, ...(node.prefixItems ?? [])]) walk(item, [...path, '[]'], parent);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, [...path, '*'], parent);
    for (const option of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]) walk(option, path, parent);
    seen.delete(node);
  };
  walk(root, [], null);
  return [...fields.values()];
}
