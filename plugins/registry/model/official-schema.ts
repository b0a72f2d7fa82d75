/**
 * The official MCP registry's server.json schema (ServerDetail), version 2025-12-11, vendored
 * unchanged in official/server.schema.json (official/README.md says where it came from). It is
 * compiled once, when this module loads, with ajv (JSON Schema draft-07; the `uri` format from
 * ajv-formats; the OpenAPI annotation `example` declared so that strict mode accepts it).
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { withExplicitDiscriminators } from './discriminated-unions.ts';
import { schemaProblems, type DocumentProblem } from './schema-problems.ts';

/** The version of the official schema Gatehouse validates with. */
export const OFFICIAL_SCHEMA_VERSION = '2025-12-11';

/** The schema as published (its `$id` is `https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json`). */
export const OFFICIAL_SERVER_SCHEMA: Readonly<Record<string, unknown>> = JSON.parse(readFileSync(new URL('./official/server.schema.json', import.meta.url), 'utf8'));

// ajv-formats is CommonJS: its default export arrives as the module object under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** An ajv instance as the registry uses it: every error at once, with the schema of each. */
export function createAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, verbose: true, strictTypes: true, strictTuples: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'example', schemaType: ['string', 'number', 'boolean', 'object', 'array', 'null'] });
  return ajv;
}

const validateServer = createAjv().compile(withExplicitDiscriminators(OFFICIAL_SERVER_SCHEMA));

/** What the official schema finds wrong with a server.json document (empty when it is valid). */
export function officialSchemaProblems(document: unknown): DocumentProblem[] {
  if (validateServer(document)) return [];
  return schemaProblems(validateServer.errors ?? []);
}
