/**
 * `spec.config.aggregation`, `.session` and `.operational`: defaults, and each mistake reported
 * with its YAML path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const backends = [
  { name: 'github', url: 'http://127.0.0.1:9101/mcp' },
  { name: 'jira', url: 'http://127.0.0.1:9102/mcp' },
];

async function problemsOf(config: string): Promise<string> {
  const result = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, config })));
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? '' : formatProblems(result.problems);
}

describe('aggregation config', () => {
  it('resolves every field', async () => {
    const config = [
      'aggregation: {conflictResolution: priority, conflictResolutionConfig: {prefixFormat: "{workload}.", priorityOrder: [jira, github]}, ' +
      '  tools: [{workload: github, filter: [create_pr, search], exclude: [search], overrides: {create_pr: {name: gh_pr, description: "Open a PR"}}}], pageSize: 50}',
      'session: {ttl: 10m, maxSessions: 500, maxSessionSize: 16Ki, maxSessionsSizePerPrincipal: 2Mi, storage: {type: redis, redis: {addr: "127.0.0.1:6379", keyPrefix: "vmcp:"}}}',
      'operational: {failureHandling: {partialFailureMode: fail, healthCheckInterval: 15s, unhealthyThreshold: 5}}',
    ].join(', ');
    const result = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, config })));
    assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
    assert.deepEqual(result.config.aggregation, {
      conflictResolution: 'priority',
      prefixFormat: '{workload}.',
      priorityOrder: ['jira', 'github'],
      tools: { github: { filter: ['create_pr', 'search'], exclude: ['search'], overrides: { create_pr: { name: 'gh_pr', description: 'Open a PR' } } } },
      pageSize: 50,
    });
    assert.deepEqual(result.config.session, {
      ttlMs: 600_000,
      maxSessions: 500,
      maxSessionsPerPrincipal: 100,
      maxSessionBytes: 16 * 1024,
      maxSessionsBytesPerPrincipal: 2 * 1024 * 1024,
      storage: { type: 'redis', redis: { sentinel: null, address: '127.0.0.1:6379', username: null, password: null, db: 0, keyPrefix: 'vmcp:' } },
    });
    assert.deepEqual(result.config.failureHandling, { partialFailureMode: 'fail', healthCheckIntervalMs: 15_000, unhealthyThreshold: 5 });
  });

  it('names a workload that is not a backend of the group', async () => {
    assert.match(await problemsOf('aggregation: {tools: [{workload: githib}]}'), /VirtualMCPServer\/vmcp spec\.config\.aggregation\.tools\[0\]\.workload: MCPServer "githib" not found \(did you mean "github"\?\)/);
  });

  it('refuses two overrides giving one name, and a backend configured twice', async () => {
    const text = await problemsOf(
      'aggregation: {tools: [{workload: github, overrides: {a: {name: x}}}, {workload: jira, overrides: {b: {name: x}}}, {workload: github}]}',
    );
    assert.match(text, /spec\.config\.aggregation\.tools\[1\]\.overrides\.b\.name: "x" is already the name of github\/a/);
    assert.match(text, /spec\.config\.aggregation\.tools\[2\]\.workload: "github" is already configured in tools\[0\]/);
  });

  it('refuses an unknown strategy, priorityOrder without priority, and a bad priorityOrder entry', async () => {
    assert.match(await problemsOf('aggregation: {conflictResolution: random}'), /spec\.config\.aggregation\.conflictResolution: /);
    assert.match(await problemsOf('aggregation: {conflictResolutionConfig: {priorityOrder: [github]}}'), /priorityOrder: is only used with conflictResolution: priority/);
    assert.match(await problemsOf('aggregation: {conflictResolution: priority, conflictResolutionConfig: {priorityOrder: [nope]}}'), /priorityOrder\[0\]: MCPServer "nope" not found/);
  });

  it('refuses a bad session TTL, a redis storage without an address, and a bad failure mode', async () => {
    assert.match(await problemsOf('session: {ttl: forever}'), /spec\.config\.session\.ttl: "forever" is not a duration/);
    assert.match(await problemsOf('session: {storage: {type: redis}}'), /spec\.config\.session\.storage/);
    assert.match(await problemsOf('session: {storage: {type: redis, redis: {}}}'), /needs sentinelConfig .* or addr/);
    assert.match(await problemsOf('operational: {failureHandling: {partialFailureMode: sometimes}}'), /partialFailureMode: /);
    assert.match(await problemsOf('session: {maxSessions: 0}'), /spec\.config\.session\.maxSessions: /);
    assert.match(await problemsOf('session: {maxSessionsPerPrincipal: 0}'), /spec\.config\.session\.maxSessionsPerPrincipal: /);
  });

  it('bounds backend answers: operational.timeouts (ToolHive\'s) and maxBackendResponseSize, resolved per backend', async () => {
    const defaults = await validateVmcpFile(await writeConfig(vmcpYaml({ backends: [{ ...backends[0]!, timeout: '5s' }, backends[1]!] })));
    assert.ok(defaults.ok, defaults.ok ? '' : formatProblems(defaults.problems));
    // Unset: each backend's whole answer within its own spec.timeout, and 32 MiB.
    assert.deepEqual(
      defaults.config.backends.map((b) => [b.name, b.timeoutMs, b.answerTimeoutMs, b.maxResponseBytes]),
      [
        ['github', 5_000, 5_000, 32 * 1024 * 1024],
        ['jira', 30_000, 30_000, 32 * 1024 * 1024],
      ],
    );
    const set = await validateVmcpFile(
      await writeConfig(vmcpYaml({ backends, config: 'operational: {timeouts: {default: 12s, perWorkload: {jira: 2m}}, maxBackendResponseSize: 8Mi}' })),
    );
    assert.ok(set.ok, set.ok ? '' : formatProblems(set.problems));
    assert.deepEqual(
      set.config.backends.map((b) => [b.name, b.answerTimeoutMs, b.maxResponseBytes]),
      [
        ['github', 12_000, 8 * 1024 * 1024],
        ['jira', 120_000, 8 * 1024 * 1024],
      ],
    );
  });

  it('refuses a bad answer bound with its YAML path', async () => {
    assert.match(await problemsOf('operational: {timeouts: {perWorkload: {jirra: 1m}}}'), /spec\.config\.operational\.timeouts\.perWorkload\.jirra: MCPServer "jirra" not found \(did you mean "jira"\?\)/);
    assert.match(await problemsOf('operational: {timeouts: {default: soon}}'), /spec\.config\.operational\.timeouts\.default: "soon" is not a duration/);
    assert.match(await problemsOf('operational: {maxBackendResponseSize: 0}'), /spec\.config\.operational\.maxBackendResponseSize: 0 is not a size/);
    assert.match(await problemsOf('operational: {maxBackendResponseSize: 32MB}'), /spec\.config\.operational\.maxBackendResponseSize: "32MB" is not a size/);
  });

  it('refuses session sizes that are not sizes, and a principal\'s budget smaller than one session', async () => {
    assert.match(await problemsOf('session: {maxSessionSize: 64KB}'), /spec\.config\.session\.maxSessionSize: "64KB" is not a size: use an integer number of bytes, or an integer with Ki, Mi or Gi/);
    assert.match(await problemsOf('session: {maxSessionsSizePerPrincipal: 0}'), /spec\.config\.session\.maxSessionsSizePerPrincipal: 0 is not a size/);
    assert.match(
      await problemsOf('session: {maxSessionSize: 64Ki, maxSessionsSizePerPrincipal: 32Ki}'),
      /spec\.config\.session\.maxSessionsSizePerPrincipal: must be at least maxSessionSize \(65536 bytes\): a principal's budget must hold one session of that size \(got 32768 bytes\)/,
    );
  });
});

