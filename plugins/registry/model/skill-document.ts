/**
 * The one shape of a skill document, whether it was synced from a source or published through
 * the API: ToolHive's skill (the registry file's `data.skills[]` and ToolHive's registry server,
 * RFC THV-0029 "Skills Support in ToolHive Registry Server"; the official MCP registry has no
 * skills), `{"namespace": "io.github.acme", "name": "pdf-report", "version", "description", …}`:
 * `namespace` reverse-DNS, `name` the skill's own name within it.
 *
 * Both shapes are read: `{namespace, name}`, and `{name: "namespace/name"}` (what this registry
 * took at publish and served until it had one shape, and what a peer may still send). The
 * registry's key for a skill is the full `namespace/name` (its paths, `search`, cursors); the
 * stored and served document is always the split one, `namespace` and `name` first.
 *
 * Rows written before there was one shape (`{name: "namespace/name"}`) are rewritten when they
 * are read (`canonicalSkill` in the store's row readers) rather than by a migration: the
 * `document` column is `json`, the text as it came, and a rewrite in SQL would go through jsonb
 * (reordering every key) and leave the stored digest of the old text behind; read-time, a
 * document already in the shape is returned as it is, so only old rows pay for the copy.
 */

export type SkillNaming = { readonly ok: true; readonly fullName: string } | { readonly ok: false; readonly problem: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The registry's name of a skill (`namespace/name`) from either shape, or what is wrong with how
 * it is named. The full name is not yet checked against the name rules (model/names.ts).
 */
export function skillFullName(document: Readonly<Record<string, unknown>>): SkillNaming {
  const { namespace, name } = document;
  // A null namespace is no namespace, as the registry read it before it had one shape (a peer or a
  // file that writes `namespace: null` keeps its skills).
  if (namespace === undefined || namespace === null) {
    return typeof name === 'string' ? { ok: true, fullName: name } : { ok: false, problem: 'name is required: the skill\'s "namespace" and "name" (or one "namespace/name")' };
  }
  if (typeof namespace !== 'string' || namespace === '') return { ok: false, problem: 'namespace must be a non-empty string: the reverse-DNS namespace of the skill, such as "io.github.acme"' };
  if (typeof name !== 'string' || name === '') return { ok: false, problem: 'name is required: the skill\'s name within its namespace, such as "pdf-report"' };
  if (name.includes('/')) return { ok: false, problem: `name ${JSON.stringify(name.slice(0, 200))} must be the name within namespace ${JSON.stringify(namespace.slice(0, 200))}, without "/"` };
  return { ok: true, fullName: `${namespace}/${name}` };
}

/**
 * The document in the one shape, for a skill whose registry name is `fullName` (a valid
 * `namespace/name`): `namespace` and `name` first, the other fields as they were (so one skill
 * is the same JSON text from every path). A document already in it is returned as it is (the
 * same object).
 */
export function canonicalSkill(document: Readonly<Record<string, unknown>>, fullName: string): Readonly<Record<string, unknown>> {
  const slash = fullName.indexOf('/');
  const namespace = fullName.slice(0, slash);
  const name = fullName.slice(slash + 1);
  const keys = Object.keys(document);
  if (keys[0] === 'namespace' && keys[1] === 'name' && document.namespace === namespace && document.name === name) return document;
  const { namespace: _namespace, name: _name, ...rest } = document;
  return { namespace, name, ...rest };
}

/** `document` in the one shape when it is a skill's (any other kind, or a non-object, as it is). */
export function canonicalDocument(kind: string, fullName: string, document: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return kind === 'skill' && isObject(document) && fullName.includes('/') ? canonicalSkill(document, fullName) : document;
}
