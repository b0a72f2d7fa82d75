/**
 * `spec.config.rateLimiting`: ToolHive's fields resolved (refillPeriod to ms), and each mistake
 * reported with its YAML path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { changesOf } from '../../core/vmcp/reload-diff.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const backends = [{ name: 'github', url: 'http://127.0.0.1:9101/mcp' }];
const OIDC = '  incomingAuth: {type: oidc, resourceUrl: "http://127.0.0.1:9/mcp", oidcConfig: {type: inline, inline: {issuer: "http://127.0.0.1:9", clientId: gw, audience: gw}}}';

async function problemsOf(rateLimiting: string, incomingAuth?: string): Promise<string> {
  const result = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, config: `rateLimiting: ${rateLimiting}`, ...(incomingAuth ? { incomingAuth } : {}) })));
  assert.equal(result.ok, false, 'expected problems');
  return result.ok ? '' : formatProblems(result.problems);
}

describe('rateLimiting config', () => {
  it('resolves every field, refillPeriod in ms; absent, it is null', async () => {
    const rateLimiting =
      'rateLimiting: {shared: {maxTokens: 1000, refillPeriod: 1m}, perUser: {maxTokens: 100, refillPeriod: 30s}, perClient: {maxTokens: 300, refillPeriod: 1m}, ' +
      'tools: [{name: create_pr, perUser: {maxTokens: 2, refillPeriod: 1h}}, {name: search, shared: {maxTokens: 50, refillPeriod: 1s}}], ' +
      'workloads: [{workload: github, shared: {maxTokens: 20, refillPeriod: 1m}}]}';
    const result = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, config: rateLimiting, incomingAuth: OIDC })));
    assert.ok(result.ok, result.ok ? '' : formatProblems(result.problems));
    assert.deepEqual(result.config.rateLimiting, {
      shared: { maxTokens: 1000, refillPeriodMs: 60_000 },
      perUser: { maxTokens: 100, refillPeriodMs: 30_000 },
      perClient: { maxTokens: 300, refillPeriodMs: 60_000 },
      tools: [
        { name: 'create_pr', shared: null, perUser: { maxTokens: 2, refillPeriodMs: 3_600_000 } },
        { name: 'search', shared: { maxTokens: 50, refillPeriodMs: 1000 }, perUser: null },
      ],
      workloads: [{ workload: 'github', shared: { maxTokens: 20, refillPeriodMs: 60_000 }, perUser: null }],
    });
    const none = await validateVmcpFile(await writeConfig(vmcpYaml({ backends })));
    assert.ok(none.ok);
    assert.equal(none.config.rateLimiting, null);
  });

  it('is reloaded: a changed rateLimiting is a change a reload applies', async () => {
    const load = async (config?: string) => {
      const result = await validateVmcpFile(await writeConfig(vmcpYaml({ backends, ...(config ? { config } : {}) })));
      assert.ok(result.ok);
      return result.config;
    };
    const none = await load();
    const some = await load('rateLimiting: {shared: {maxTokens: 5, refillPeriod: 1m}}');
    assert.deepEqual(changesOf(none, some).other, ['rateLimiting']);
    assert.deepEqual(changesOf(some, await load('rateLimiting: {shared: {maxTokens: 5, refillPeriod: 1m}}')).other, []);
  });

  it('refuses a rateLimiting that limits nothing, and a tool entry without a bucket', async () => {
    assert.match(await problemsOf('{}'), /spec\.config\.rateLimiting: needs at least one of shared, perUser, perClient, tools or workloads/);
    assert.match(await problemsOf('{tools: [{name: create_pr}]}'), /spec\.config\.rateLimiting\.tools\[0\]\.name: tool "create_pr" needs shared or perUser \(or both\)/);
  });

  it('names a workload that is not a backend of the group, one limited twice, and one without a bucket', async () => {
    const text = await problemsOf('{workloads: [{workload: githib, shared: {maxTokens: 1, refillPeriod: 1m}}, {workload: github, perUser: {maxTokens: 1, refillPeriod: 1m}}, {workload: github, shared: {maxTokens: 1, refillPeriod: 1m}}, {workload: github}]}');
    assert.match(text, /spec\.config\.rateLimiting\.workloads\[0\]\.workload: MCPServer "githib" not found \(did you mean "github"\?\)/);
    assert.match(text, /spec\.config\.rateLimiting\.workloads\[2\]\.workload: "github" is already limited in workloads\[1\]/);
    assert.match(text, /spec\.config\.rateLimiting\.workloads\[3\]\.workload: workload "github" needs shared or perUser/);
  });

  it('names bad buckets by their path', async () => {
    const text = await problemsOf('{shared: {maxTokens: 0, refillPeriod: 1m}, perUser: {maxTokens: 5, refillPeriod: soon}, tools: [{name: a, shared: {maxTokens: 1, refillPeriod: 48h}}, {name: a, perUser: {maxTokens: 1}}]}');
    assert.match(text, /spec\.config\.rateLimiting\.shared\.maxTokens: /);
    assert.match(text, /spec\.config\.rateLimiting\.perUser\.refillPeriod: "soon" is not a duration/);
    assert.match(text, /spec\.config\.rateLimiting\.tools\[0\]\.shared\.refillPeriod: must be at most 24h/);
    assert.match(text, /spec\.config\.rateLimiting\.tools\[1\]\.name: duplicate tool name "a"/);
    assert.match(text, /spec\.config\.rateLimiting\.tools\[1\]\.perUser\.refillPeriod: is required/);
  });

  it('refuses unknown fields and perClient without OAuth clients (anonymous incoming auth)', async () => {
    assert.match(await problemsOf('{shared: {maxTokens: 5, refillPeriod: 1m, burst: 3}}'), /spec\.config\.rateLimiting\.shared/);
    assert.match(await problemsOf('{perClient: {maxTokens: 5, refillPeriod: 1m}}'), /spec\.config\.rateLimiting\.perClient: needs incomingAuth type oidc/);
  });
});
