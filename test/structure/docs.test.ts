/**
 * The documentation lives in READMEs beside the code (the root README's map lists them). These
 * tests keep it whole as the code moves:
 *
 * - Links. Every relative link of every markdown file of the repository (outside the folders
 *   .gitignore names) resolves: its path names a file or folder inside the repository, and its
 *   #anchor is a heading of the markdown file it names, by GitHub's anchor rules (github-slugger:
 *   lowercase, punctuation dropped, spaces to hyphens, -1, -2... for repeated headings), or an
 *   HTML anchor. Links with a scheme (https:) are not fetched.
 * - Tables of contents. A README with three sections or more (`##`) opens with `## Contents`,
 *   which links every one of its `##` sections.
 * - Configuration fields. Every field of the configuration schemas (the vMCP's resources,
 *   core/config/vmcp-schema.ts, and the registry server's file and Secret documents,
 *   plugins/registry/config/registry-schema.ts, and ToolHive's authorization file,
 *   core/config/authz-file.ts), walked through zod's JSON Schema, is documented:
 *   its name is written as code (in backticks, or in a fenced code block such as a YAML example)
 *   in the same block of some markdown file as the name of its parent field. A block is a
 *   paragraph, a list item, a table row (with its table's header row) or a code block. So
 *   `spec.config.session` and `maxSessions` in one table row document `maxSessions`; a field of
 *   the document's top level (a resource's `spec`, the registry's `sources`) needs only its own
 *   name. A new field, or one renamed, fails until a README names it next to its parent.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretStore } from '../../core/config/secrets.ts';
import { RESOURCE_KINDS, resourceSchemas } from '../../core/config/vmcp-schema.ts';
import { registryFileSchema, secretDocumentSchema } from '../../plugins/registry/config/registry-schema.ts';
import { authzFileSchema } from '../../core/config/authz-file.ts';
import { linkProblem, markdownFiles, readMarkdown, type MarkdownFile } from '../helpers/markdown.ts';
import { schemaFields, type SchemaField } from '../helpers/schema-fields.ts';

const cache = new Map<string, MarkdownFile>();
const read = (path: string): MarkdownFile => {
  let doc = cache.get(path);
  if (doc === undefined) cache.set(path, (doc = readMarkdown(path)));
  return doc;
};
const docs = markdownFiles().map(read);

function configFields(): SchemaField[] {
  const schemas = resourceSchemas({
    configDir: '.',
    groups: new Set(),
    fedGroups: new Set(),
    servers: new Map(),
    externalAuthConfigs: new Set(),
    secrets: new SecretStore(),
    vmcpGroup: undefined,
    providers: null,
    anonymousIncoming: false,
    configMaps: new Map(),
  });
  return [
    ...RESOURCE_KINDS.flatMap((kind) => schemaFields(kind, schemas[kind])),
    ...schemaFields('registry', registryFileSchema(new SecretStore())),
    ...schemaFields('registry Secret', secretDocumentSchema),
    ...schemaFields('authz file', authzFileSchema),
  ];
}

describe('the documentation', () => {
  it('is read from the READMEs beside the code', () => {
    for (const readme of ['README.md', 'core/README.md', 'core/config/README.md', 'plugins/README.md', 'plugins/registry/README.md', 'test/security/README.md', 'bench/README.md']) {
      assert.ok(docs.some((doc) => doc.path === readme), `${readme} is found`);
    }
  });

  it('has no relative link that fails to resolve, to a file or to an #anchor', () => {
    const broken: string[] = [];
    for (const doc of docs) {
      for (const link of doc.links) {
        const problem = linkProblem(doc, link.href, read);
        if (problem !== null) broken.push(`${doc.path}: [${link.text}](${link.href}) ${problem}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('opens each README of three sections or more with a table of contents linking every section', () => {
    const missing: string[] = [];
    for (const doc of docs.filter((d) => d.path.endsWith('README.md'))) {
      const sections = doc.headings.filter((h) => h.depth === 2 && h.raw !== 'Contents');
      if (sections.length < 3) continue;
      if (!doc.headings.some((h) => h.depth === 2 && h.raw === 'Contents')) {
        missing.push(`${doc.path}: no "## Contents"`);
        continue;
      }
      const linked = new Set(doc.links.filter((l) => l.href.startsWith('#')).map((l) => l.href.slice(1)));
      for (const section of sections) if (!linked.has(section.anchor)) missing.push(`${doc.path}: Contents does not link "${section.raw}" (#${section.anchor})`);
    }
    assert.deepEqual(missing, []);
  });

  it('documents every field of the configuration schemas, next to its parent', () => {
    const blocks = docs.flatMap((doc) => doc.codeBlocks);
    const fields = configFields();
    assert.ok(fields.length > 200, `the schemas are walked (${fields.length} fields)`);
    const documented = (field: SchemaField): boolean =>
      blocks.some((words) => words.has(field.name) && (field.parent === null || words.has(field.parent)));
    const undocumented = fields.filter((field) => !documented(field)).map((f) => `${f.path} (\`${f.name}\` in a block with \`${f.parent ?? ''}\`)`);
    assert.deepEqual(undocumented, []);
  });
});
