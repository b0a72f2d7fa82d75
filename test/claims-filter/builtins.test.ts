/**
 * The built-ins of a vMCP config (plugins/cli/vmcp-builtins.ts): the claims filter runs right
 * after incoming auth (before any plugin whose view is asked later, Cedar's), only when claims
 * are configured on some backend or item; with anonymous incoming auth it is there to warn.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VmcpConfig } from '../../core/config/vmcp-types.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { claimsFilter } from '../../plugins/registry-authz/gateway-filter.ts';
import { configOf, file, TWO } from './helpers/config-file.ts';

describe('the built-ins', () => {
  const names = (config: VmcpConfig) => vmcpBuiltins(config).map((spec) => spec.definition.name);
  const oidc = '{type: oidc, resourceUrl: "http://127.0.0.1:4483/mcp", oidcConfig: {type: inline, inline: {issuer: "http://127.0.0.1:9999", clientId: gatehouse, audience: "http://127.0.0.1:4483/mcp"}}}';

  it('the claims filter runs right after incoming auth, only when claims are configured', async () => {
    const plain = await configOf(file(TWO, '      pageSize: 0', oidc));
    assert.deepEqual(names(plain), ['oidc']);
    const items = await configOf(file(TWO, '      tools: [{workload: jira, authzClaims: {prompts: {p: {team: x}}}}]', oidc));
    assert.deepEqual(names(items), ['oidc', 'registry-authz-filter']);
    const annotated = await configOf(file([{ name: 'github', annotations: "    toolhive.stacklok.dev/authz-claims: '{\"team\": \"a\"}'" }, { name: 'jira' }], '      pageSize: 0', oidc));
    const specs = vmcpBuiltins(annotated);
    assert.deepEqual(specs.map((spec) => spec.definition.name), ['oidc', 'registry-authz-filter']);
    assert.equal(specs[1]!.definition, claimsFilter);
    assert.deepEqual(specs[1]!.config, { anonymous: false, where: 'VirtualMCPServer/vmcp' });
  });

  it('with anonymous incoming auth it is still there, to warn that nothing is filtered', async () => {
    const items = await configOf(file(TWO, '      tools: [{workload: jira, authzClaims: {prompts: {p: {team: x}}}}]'));
    const specs = vmcpBuiltins(items);
    assert.deepEqual(specs.map((spec) => spec.definition.name), ['anonymous', 'registry-authz-filter']);
    assert.deepEqual(specs[1]!.config, { anonymous: true, where: 'VirtualMCPServer/vmcp' });
  });
});
