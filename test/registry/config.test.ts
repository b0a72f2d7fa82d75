/**
 * The registry config loader: defaults, the resolved config, and every problem of a file at
 * once, each at its line and column with its YAML path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateRegistryText, type RegistryConfig } from '../../plugins/registry/config/registry-config.ts';
import { authzModeOf } from '../../plugins/registry/registry-server.ts';

function valid(yaml: string): RegistryConfig {
  const result = validateRegistryText(yaml, '/etc/gatehouse/registry.yaml');
  if (!result.ok) assert.fail(result.problems.map(formatProblem).join('\n'));
  return result.config;
}

function problems(yaml: string): string[] {
  const result = validateRegistryText(yaml, 'registry.yaml');
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? [] : result.problems.map(formatProblem);
}

describe('a valid registry config', () => {
  it('resolves defaults: embedded database next to the file, upstream format, a 5m sync, 1Mi bodies', () => {
    const config = valid(`auth: {mode: anonymous}
sources:
  - {name: files, file: {path: ./catalog.json}}
  - {name: internal, managed: {}}
registries: [{name: main, sources: [internal, files]}]
`);
    assert.deepEqual(config.database, { type: 'embedded', path: '/etc/gatehouse/data/registry' });
    assert.deepEqual(config.sources[0], { name: 'files', kind: 'file', format: 'upstream', file: { path: '/etc/gatehouse/catalog.json' }, git: null, api: null, cluster: null, syncIntervalMs: 300_000, claims: {} });
    assert.deepEqual(config.sources[1], { name: 'internal', kind: 'managed', format: null, file: null, git: null, api: null, cluster: null, syncIntervalMs: null, claims: {} });
    assert.deepEqual(config.registries, [{ name: 'main', sources: ['internal', 'files'], claims: {} }]);
    assert.equal(config.server.maxBodyBytes, 1024 * 1024);
    assert.equal(authzModeOf(config), 'anonymous');
  });
  it('the oauth and authz sections; the mode follows the authz block', () => {
    const yaml = (authz: string) => `auth:
  mode: oauth
  oauth:
    resourceUrl: https://registry.example.com
    providers:
      - {name: a, issuerUrl: "https://login.example.com/realms/acme", audience: reg}
      - {name: b, issuerUrl: "http://127.0.0.1:9000", audience: reg, allowPrivateIP: true}
${authz}
sources: [{name: s, git: {repository: "https://github.com/acme/r.git", branch: main, path: registry.json}, syncPolicy: {interval: 30m}, claims: {org: acme}}]
database: {type: postgres, url: "postgres://u:p@db:5432/registry"}
`;
    const full = valid(yaml('  authz:\n    roles:\n      superAdmin: [{role: admin}]\n      manageEntries: [{role: writer}, {groups: publishers, org: acme}]'));
    assert.equal(authzModeOf(full), 'full');
    assert.ok(full.auth.mode === 'oauth');
    assert.deepEqual(full.auth.providers.map((p) => [p.name, p.allowPrivateIp]), [['a', false], ['b', true]]);
    assert.deepEqual(full.auth.authz?.roles.manageEntries, [{ role: 'writer' }, { groups: 'publishers', org: 'acme' }]);
    assert.deepEqual(full.sources[0]?.git, { repository: 'https://github.com/acme/r.git', branch: 'main', path: 'registry.json', auth: null });
    assert.equal(full.sources[0]?.syncIntervalMs, 30 * 60_000);
    assert.deepEqual(full.database, { type: 'postgres', url: 'postgres://u:p@db:5432/registry' });
    assert.equal(authzModeOf(valid(yaml(''))), 'authOnly');
  });
});

describe('problems', () => {
  it('are all reported at once, in file order, with positions and YAML paths', () => {
    const found = problems(`auth:
  mode: oauth
  oauth:
    resourceUrl: not-a-url
    providers:
      - {name: a, issuerUrl: "http://login.example.com", audience: reg}
      - {name: a, issuerUrl: "https://login.example.com", audience: reg}
  authz:
    roles:
      superAdmins: [{role: admin}]
      manageEntries: [{}, {team: [a]}]
sources:
  - {name: s1, managed: {}, file: {path: x.json}}
  - {name: s1, file: {path: x.json}, syncPolicy: {interval: 0s}}
  - {name: s3}
  - {name: s4, file: {path: y.json}, format: toolhive}
registries:
  - {name: r, sources: [s1, s1, nope], claims: {org: 1}}
database: {type: memory, path: ./x}
server: {maxBodySize: lots}
`);
    const expected = [
      /^registry\.yaml:4:18 auth\.oauth\.resourceUrl: must be an absolute http\(s\) URL/,
      /^registry\.yaml:6:30 auth\.oauth\.providers\[0\]\.issuerUrl: must use https/,
      /^registry\.yaml:7:16 auth\.oauth\.providers\[1\]\.name: duplicate provider name "a"/,
      /^registry\.yaml:10:7 auth\.authz\.roles: unknown field "superAdmins" \(did you mean "superAdmin"\?\)/,
      /^registry\.yaml:11:23 auth\.authz\.roles\.manageEntries\[0\]: an empty claim map matches every caller/,
      /^registry\.yaml:11:28 auth\.authz\.roles\.manageEntries\[1\]\.team: must be a string \(got a list\)/,
      /^registry\.yaml:13:29 sources\[0\]\.file: must not be set together with managed/,
      /^registry\.yaml:14:12 sources\[1\]\.name: duplicate source name "s1"/,
      /^registry\.yaml:14:61 sources\[1\]\.syncPolicy\.interval: must be greater than zero/,
      /^registry\.yaml:15:5 sources\[2\]: needs exactly one of git, managed, file, api, cluster/,
      /^registry\.yaml:16:46 sources\[3\]\.format: only the upstream format/,
      /^registry\.yaml:18:29 registries\[0\]\.sources\[1\]: source "s1" is listed twice/,
      /^registry\.yaml:18:33 registries\[0\]\.sources\[2\]: source "nope" not found/,
      /^registry\.yaml:18:54 registries\[0\]\.claims\.org: must be a string \(got 1\)/,
      /^registry\.yaml:19:26 database\.path: must not be set when type is memory/,
      /^registry\.yaml:20:23 server\.maxBodySize: "lots" is not a size/,
    ];
    assert.equal(found.length, expected.length, found.join('\n'));
    expected.forEach((pattern, i) => assert.match(found[i]!, pattern));
  });
  it('every source kind, credentials from Secret documents beside the config', () => {
    const config = valid(`auth: {mode: anonymous}
sources:
  - name: git
    git: {repository: "https://git.example.com/acme/r.git", path: r.json, auth: {username: bot, passwordSecretRef: {name: git-credentials, key: token}}}
  - {name: peer, api: {url: "https://registry.example.com/", tokenSecretRef: {name: git-credentials, key: peer}}, syncPolicy: {interval: 1h}}
  - {name: manifests, cluster: {manifests: [./servers, /etc/mcp/one.yaml]}, claims: {team: a}}
  - {name: kube, cluster: {kubernetes: {namespace: mcp, labelSelector: "tier=prod"}}}
sync: {allowPrivateAddresses: true, fileRoot: ./catalogs, maxConcurrent: 2}
---
apiVersion: v1
kind: Secret
metadata: {name: git-credentials}
stringData: {token: s3cret, peer: p33r}
`);
    const [git, peer, manifests, kube] = config.sources;
    assert.deepEqual(git?.git?.auth, { username: 'bot', passwordSecretRef: { name: 'git-credentials', key: 'token' } });
    assert.deepEqual(config.secrets.resolve({ name: 'git-credentials', key: 'token' }), { found: true, value: 's3cret' });
    assert.deepEqual([peer?.kind, peer?.api, peer?.format, peer?.syncIntervalMs], ['api', { url: 'https://registry.example.com', tokenSecretRef: { name: 'git-credentials', key: 'peer' } }, null, 3_600_000]);
    assert.deepEqual(manifests?.cluster, { manifests: ['/etc/gatehouse/servers', '/etc/mcp/one.yaml'] });
    assert.deepEqual(kube?.cluster, { kubernetes: { namespace: 'mcp', labelSelector: 'tier=prod', kubeconfig: null } });
    assert.deepEqual(config.sync, { allowPrivateAddresses: true, fileRoot: '/etc/gatehouse/catalogs', maxConcurrent: 2 });
    assert.doesNotMatch(JSON.stringify(config.sources), /s3cret|p33r/, 'only references are kept with the sources');
  });
  it('authorization needs OAuth: authz under anonymous mode is a problem', () => {
    assert.match(problems('auth: {mode: anonymous, authz: {roles: {}}}\n')[0]!, /auth\.authz: needs mode oauth: OAuth authentication must be enabled before authorization is configured/);
    assert.match(problems('auth: {mode: oauth}\n')[0]!, /auth\.oauth: is required when mode is oauth/);
  });
  it('source kinds: missing secrets and keys, credentials in URLs, cluster blocks, formats', () => {
    const found = problems(`auth: {mode: anonymous}
sources:
  - {name: a, git: {repository: "https://x.example/r.git", path: r.json, auth: {passwordSecretRef: {name: nope, key: token}}}}
  - {name: b, api: {url: "https://user:pw@registry.example.com", tokenSecretRef: {name: creds, key: nokey}}}
  - {name: c, cluster: {}}
  - {name: d, cluster: {manifests: [./x]}, format: upstream}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {token: t}
`);
    const expected = [
      /sources\[0\]\.git\.auth\.passwordSecretRef: Secret "nope" not found/,
      /sources\[1\]\.api\.url: must not carry a user name or password: put the credentials in a Secret/,
      /sources\[1\]\.api\.tokenSecretRef: Secret "creds" has no key "nokey"/,
      /sources\[2\]\.cluster: needs exactly one of manifests .* or kubernetes/,
      /sources\[3\]\.format: must not be set on a cluster source/,
    ];
    assert.equal(found.length, expected.length, found.join('\n'));
    expected.forEach((pattern, i) => assert.match(found[i]!, pattern));
    assert.doesNotMatch(found.join('\n'), /\bpw\b/, 'a password in a URL is not echoed');
  });
  it('a registry lists at most one managed source', () => {
    const found = problems('auth: {mode: anonymous}\nsources: [{name: a, managed: {}}, {name: b, managed: {}}]\nregistries: [{name: r, sources: [a, b]}]\n');
    assert.match(found[0]!, /registries\[0\]\.sources\[1\]: a registry lists at most one managed source/);
  });
  it('the file itself: empty, two documents, YAML syntax, unknown top-level fields', () => {
    assert.match(problems('')[0]!, /the file is empty/);
    assert.match(problems('auth: {mode: anonymous}\n---\nauth: {mode: anonymous}\n')[0]!, /registry\.yaml:3:1: a registry configuration is one YAML document/);
    assert.match(problems('auth: {mode: anonymous\n')[0]!, /YAML syntax error/);
    assert.match(problems('auth: {mode: anonymous}\nregistrys: []\n')[0]!, /registry\.yaml:2:1 : unknown field "registrys" \(did you mean "registries"\?\)|unknown field "registrys"/);
    assert.match(problems('sources: []\n')[0]!, /auth: is required/);
    assert.match(problems('auth: {mode: anonymous}\ndatabase: {type: postgres, url: "mysql://x"}\n')[0]!, /database\.url: must be a postgres:\/\//);
  });
});
