/**
 * `server.workers`: its values, and the refusals of a configuration whose workers would not share
 * what a client's next request needs (memory session storage, the embedded authorization server's
 * memory storage or its own keys, the registry's embedded or memory store), each naming the YAML
 * path `server.workers` and why. The supervision of the workers: test/scale/workers.test.ts; the
 * restart policy: below.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import { RestartPolicy } from '../../plugins/cli/workers/restart-policy.ts';
import { workerCount, workerEnv } from '../../plugins/cli/workers/worker.ts';
import { validateRegistryText } from '../../plugins/registry/config/registry-config.ts';
import { vmcpYaml } from '../helpers/gateway.ts';

const FILE = 'vmcp.yaml';
const REDIS = '{type: redis, redis: {addr: "127.0.0.1:6379"}}';
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const HMAC = randomBytes(32).toString('base64url');

function vmcp(o: { workers: string; session?: string; authServer?: string; keys?: boolean }): string {
  const issuer = 'http://127.0.0.1:9000';
  const auth =
    o.authServer === undefined
      ? {}
      : {
          incomingAuth: `  incomingAuth:\n    type: oidc\n    resourceUrl: "${issuer}/mcp"\n    oidcConfig: {type: inline, inline: {issuer: "${issuer}", clientId: vmcp, audience: "${issuer}/mcp"}}`,
          authServer:
            `  authServerConfig:\n    issuer: "${issuer}"\n` +
            (o.keys === true ? '    signingKeySecretRefs: [{name: auth, key: signing}]\n    hmacSecretRefs: [{name: auth, key: hmac}]\n' : '') +
            `    upstreamProviders: [{name: corp, type: oidc, oidcConfig: {issuerUrl: "http://127.0.0.1:9001", clientId: gatehouse, scopes: [openid]}}]\n` +
            (o.authServer === '' ? '' : `    storage: ${o.authServer}\n`),
        };
  return vmcpYaml({
    backends: [{ name: 'echo', url: 'http://127.0.0.1:9100/mcp' }],
    config: o.session === undefined ? undefined : `session: {storage: ${o.session}}`,
    incomingAuth: auth.incomingAuth,
    spec: (auth.authServer ?? '') + `  server: {workers: ${o.workers}}`,
    documents:
      o.keys === true
        ? `apiVersion: v1\nkind: Secret\nmetadata: {name: auth}\nstringData:\n  hmac: "${HMAC}"\n  signing: |\n${SIGNING_KEY.trim().split('\n').map((l) => `    ${l}`).join('\n')}`
        : undefined,
  });
}

/** The formatted problems of `text`, without the file and position. */
function problems(text: string): string[] {
  const result = validateVmcpText(text, FILE);
  return result.ok ? [] : result.problems.map((p) => formatProblem(p).replace(/^[^ ]+ /, ''));
}

describe('server.workers', () => {
  it('defaults to 1 and takes a number or auto', () => {
    const result = validateVmcpText(vmcp({ workers: '1' }).replace('  server: {workers: 1}', ''), FILE);
    assert.ok(result.ok);
    assert.equal(result.config.server.workers, 1);
    for (const [written, value] of [['3', 3], ['auto', 'auto']] as const) {
      const valid = validateVmcpText(vmcp({ workers: written, session: REDIS }), FILE);
      assert.ok(valid.ok, JSON.stringify(valid.ok ? null : valid.problems));
      assert.equal(valid.config.server.workers, value);
    }
    assert.ok(workerCount('auto') >= 1);
    assert.equal(workerCount(3), 3);
  });

  it('refuses 0, more than 64, fractions and other words, at spec.server.workers', () => {
    assert.deepEqual(problems(vmcp({ workers: '0', session: REDIS })), ['VirtualMCPServer/vmcp spec.server.workers: must be at least 1 (got 0)']);
    for (const bad of ['65', '1.5', 'many']) {
      const [problem, ...rest] = problems(vmcp({ workers: bad, session: REDIS }));
      assert.match(problem ?? '', /^VirtualMCPServer\/vmcp spec\.server\.workers: /, bad);
      assert.deepEqual(rest, []);
    }
  });

  it('refuses more than one worker with sessions in memory, naming the path and why', () => {
    for (const [workers, subject] of [['2', '2 workers need'], ['auto', 'auto \\(a worker per core\\) needs']] as const) {
      for (const session of [undefined, '{type: memory}']) {
        const found = problems(vmcp({ workers, session }));
        assert.equal(found.length, 1, found.join('\n'));
        assert.match(found[0]!, new RegExp(`^VirtualMCPServer/vmcp spec\\.server\\.workers: ${subject} sessions shared between the workers, but spec\\.config\\.session\\.storage is memory: a session opened through one worker would be unknown to the others \\(404\\)`));
      }
    }
    // One worker is one process: memory is fine, as it always was.
    assert.deepEqual(problems(vmcp({ workers: '1' })), []);
  });

  it('refuses more than one worker when the embedded authorization server keeps its records in memory or makes its own keys', () => {
    const memory = problems(vmcp({ workers: '2', session: REDIS, authServer: '', keys: true }));
    assert.equal(memory.length, 1, memory.join('\n'));
    assert.match(memory[0]!, /spec\.server\.workers: 2 workers need the embedded authorization server's records shared between the workers, but spec\.authServerConfig\.storage is memory/);
    const noKeys = problems(vmcp({ workers: '2', session: REDIS, authServer: REDIS }));
    assert.equal(noKeys.length, 1, noKeys.join('\n'));
    assert.match(noKeys[0]!, /spec\.server\.workers: 2 workers need the embedded authorization server's keys configured \(spec\.authServerConfig\.signingKeySecretRefs and hmacSecretRefs\): without them each worker makes its own/);
    assert.deepEqual(problems(vmcp({ workers: '2', session: REDIS, authServer: REDIS, keys: true })), []);
    // One worker: the authorization server's memory storage and own keys stay allowed.
    assert.deepEqual(problems(vmcp({ workers: '1', authServer: '' })), []);
  });

  it('refuses more than one registry worker without a PostgreSQL server', () => {
    const registry = (database: string, workers: string): string[] => {
      const result = validateRegistryText(`auth: {mode: anonymous}\n${database}server: {workers: ${workers}}\n`, 'registry.yaml');
      return result.ok ? [] : result.problems.map((p) => formatProblem(p).replace(/^[^ ]+ /, ''));
    };
    assert.match(registry('', '2').join('\n'), /server\.workers: 2 workers need a database they share, but database\.type is embedded: the embedded store's files can be opened by one process only/);
    assert.match(registry('database: {type: memory}\n', 'auto').join('\n'), /server\.workers: auto \(a worker per core\) needs a database they share, but database\.type is memory/);
    assert.deepEqual(registry('database: {type: postgres, url: "postgres://u:p@127.0.0.1:5432/db"}\n', '2'), []);
    assert.deepEqual(registry('', '1'), []);
  });
});

describe("a worker's environment", () => {
  it("gives each worker its own OpenTelemetry service.instance.id, keeping the operator's other attributes", () => {
    assert.match(workerEnv({}, 0, 42).OTEL_RESOURCE_ATTRIBUTES!, /^service\.instance\.id=[^,]+-42-worker-0$/);
    assert.deepEqual(workerEnv({ OTEL_RESOURCE_ATTRIBUTES: 'k8s.pod.name=gw-1, deployment.environment=prod' }, 1, 42).OTEL_RESOURCE_ATTRIBUTES!.split(',').slice(0, 2), [
      'k8s.pod.name=gw-1',
      'deployment.environment=prod',
    ]);
    assert.equal(workerEnv({ OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=gw-1,team=x' }, 1).OTEL_RESOURCE_ATTRIBUTES, 'team=x,service.instance.id=gw-1-worker-1');
  });
});

describe('restarting workers', () => {
  it('waits longer for each death in a row, and the first delay again after a healthy minute', () => {
    const policy = new RestartPolicy({ maxDeaths: 100 });
    const delays = [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => policy.died(0, 10, i * 60_001));
    assert.deepEqual(
      delays.map((d) => (d.restart ? d.delayMs : null)),
      [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000],
    );
    assert.deepEqual(policy.died(0, 60_000, 10 * 60_001), { restart: true, delayMs: 100 });
    // Another slot has its own streak.
    assert.deepEqual(policy.died(1, 10, 10 * 60_001), { restart: true, delayMs: 100 });
  });

  it('gives up on a crash loop: more than 5 deaths of any workers within a minute', () => {
    const policy = new RestartPolicy();
    for (let i = 0; i < 5; i++) assert.equal(policy.died(i % 2, 10, 1_000 + i).restart, true);
    const sixth = policy.died(0, 10, 1_005);
    assert.equal(sixth.restart, false);
    assert.match(sixth.restart ? '' : sixth.reason, /^workers died 6 times within 60 s \(a crash loop\)/);
    // Spread over more than a minute, deaths are not a loop.
    const spread = new RestartPolicy();
    for (let i = 0; i < 20; i++) assert.equal(spread.died(0, 10, i * 15_000).restart, true);
  });
});
