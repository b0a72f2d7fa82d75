/**
 * The "acme" fixture: a registry server in a chosen operating mode with file sources of
 * different claims, managed sources, several registries, an OIDC issuer on loopback and one
 * token per persona (string and array claims).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startIssuer, type TestIssuer } from './issuer.ts';
import { startTestRegistry, tempDir, type TestRegistry } from './registry.ts';

export type Mode = 'anonymous' | 'authOnly' | 'full';

export const PERSONAS = {
  superAdmin: { sub: 'root', role: 'super-admin' },
  platformAdmin: { sub: 'pa', org: 'acme', team: 'platform', role: 'admin' },
  dataAdmin: { sub: 'da', org: 'acme', team: 'data', role: 'admin' },
  platformWriter: { sub: 'pw', org: 'acme', team: ['platform'], role: 'writer' },
  dataWriter: { sub: 'dw', org: 'acme', team: 'data', role: ['reader', 'writer'] },
  groupPublisher: { sub: 'gp', org: 'acme', team: 'platform', groups: ['everyone', 'publishers'] },
  halfPublisher: { sub: 'hp', org: 'contoso', groups: ['publishers'] },
  outsider: { sub: 'out', org: 'contoso', role: 'admin' },
  reader: { sub: 'rd', org: 'acme', team: 'platform' },
} as const;

export type Persona = keyof typeof PERSONAS;

const server = (name: string, version: string, description: string): object => ({ name, version, description });

const FILES: Record<string, object> = {
  'shared.json': { data: { servers: [server('io.acme/shared-tool', '1.0.0', 'Shared'), server('io.acme/shared-tool', '1.1.0', 'Shared')], skills: [{ namespace: 'io.acme', name: 'shared-skill', version: '1.0.0', description: 'A skill' }] } },
  'platform.json': { data: { servers: [server('io.acme/deploy-helper', '2.0.0', 'Deploys')] } },
  'data.json': { data: { servers: [server('io.acme/data-pipeline', '0.3.0', 'Pipelines')] } },
  'open.json': { data: { servers: [server('io.open/free-tool', '1.0.0', 'Free')] } },
};

const ROLES = `  authz:
    roles:
      superAdmin:
        - {role: super-admin}
      manageSources:
        - {role: admin}
      manageRegistries:
        - {role: admin}
      manageEntries:
        - {role: writer}
        - {groups: publishers, org: acme}
`;

function configYaml(mode: Mode, issuer: string, extra: string): string {
  const auth =
    mode === 'anonymous'
      ? 'auth:\n  mode: anonymous\n'
      : `auth:\n  mode: oauth\n  oauth:\n    resourceUrl: http://127.0.0.1/\n    providers:\n      - {name: test, issuerUrl: "${issuer}", audience: registry}\n${mode === 'full' ? ROLES : ''}`;
  return `${auth}
sources:
  - {name: internal, managed: {}}
  - {name: team-internal, managed: {}, claims: {org: acme, team: platform}}
  - {name: shared, file: {path: ./shared.json}, claims: {org: acme}}
  - {name: platform-tools, file: {path: ./platform.json}, claims: {org: acme, team: platform}}
  - {name: data-tools, file: {path: ./data.json}, claims: {org: acme, team: data}}
  - {name: open-files, file: {path: ./open.json}}
registries:
  - {name: acme-all, sources: [internal, shared, platform-tools, data-tools, open-files], claims: {org: acme}}
  - {name: acme-platform, sources: [team-internal, shared, platform-tools], claims: {org: acme, team: platform}}
  - {name: public, sources: [internal, shared]}
  - {name: readonly, sources: [shared]}
database: {type: memory}
${extra}`;
}

export interface Acme {
  readonly registry: TestRegistry;
  readonly issuer: TestIssuer | null;
  readonly tokens: Record<Persona, string | undefined>;
  close(): Promise<void>;
}

/** `extra`: top-level YAML appended to the file (an `audit:` section, say). */
export async function startAcme(mode: Mode, extra = ''): Promise<Acme> {
  const dir = await tempDir();
  for (const [file, content] of Object.entries(FILES)) await writeFile(join(dir, file), JSON.stringify(content));
  const issuer = mode === 'anonymous' ? null : await startIssuer('registry');
  const registry = await startTestRegistry(configYaml(mode, issuer?.url ?? '', extra), dir);
  const tokens = {} as Record<Persona, string | undefined>;
  for (const [persona, claims] of Object.entries(PERSONAS)) tokens[persona as Persona] = issuer === null ? undefined : await issuer.token(claims);
  return {
    registry,
    issuer,
    tokens,
    async close() {
      await registry.stop();
      await issuer?.close();
    },
  };
}
