/**
 * vMCP incoming-auth config: start-up validation of the oidc block, and
 * `incomingAuth.scopes` (Gatehouse extension), the scopes advertised in the RFC 9728 document
 * (`scopes_supported`) and in the 401 challenge (`scope=`); optional, and absent from the
 * resolved config when not set.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';
import { GROUP_WITH_ECHO } from '../helpers/gateway.ts';

const FILE = join(import.meta.dirname, 'fixtures', 'inline.yaml');

function vmcp(incomingAuth: string): string {
  return `${GROUP_WITH_ECHO}apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
${incomingAuth}
`;
}

const OIDC = `  incomingAuth:
    type: oidc
    resourceUrl: https://mcp.example.com/mcp
    oidcConfig:
      type: inline
      inline: {issuer: "https://id.example.com", clientId: vmcp, audience: "https://mcp.example.com/mcp"}`;

test('incomingAuth.scopes resolves as given', () => {
  const result = validateVmcpText(vmcp(`${OIDC}\n    scopes: [mcp:tools, "mcp:admin"]`), FILE);
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.problems));
  assert.equal(result.config.incomingAuth.type, 'oidc');
  assert.deepEqual(result.config.incomingAuth.type === 'oidc' ? result.config.incomingAuth.scopes : null, ['mcp:tools', 'mcp:admin']);
});

test('incomingAuth.scopes is absent from the resolved config when not set', () => {
  const result = validateVmcpText(vmcp(OIDC), FILE);
  assert.ok(result.ok);
  assert.ok(!('scopes' in result.config.incomingAuth));
});

test('incomingAuth.scopes must be a list of non-empty strings', () => {
  const result = validateVmcpText(vmcp(`${OIDC}\n    scopes: [mcp:tools, ""]`), FILE);
  assert.ok(!result.ok);
  const lines = result.problems.map(formatProblem);
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0]!, /VirtualMCPServer\/vmcp spec\.incomingAuth\.scopes\[1\]/);
  const notList = validateVmcpText(vmcp(`${OIDC}\n    scopes: mcp:tools`), FILE);
  assert.ok(!notList.ok);
  assert.match(notList.problems.map(formatProblem).join('\n'), /spec\.incomingAuth\.scopes/);
});

/** The formatted problems of an inline OIDC block with these `inline` fields. */
function inlineProblems(inline: string): string[] {
  const result = validateVmcpText(
    vmcp(`  incomingAuth:
    type: oidc
    resourceUrl: https://mcp.example.com/mcp
    oidcConfig:
      type: inline
      inline: {${inline}}`),
    FILE,
  );
  assert.ok(!result.ok, 'the config should be invalid');
  return result.problems.map(formatProblem);
}

test('startup validation: missing audience, issuer not a URL, http issuer off loopback', () => {
  const missing = inlineProblems('issuer: "https://id.example.com", clientId: vmcp');
  assert.equal(missing.length, 1, missing.join('\n'));
  assert.match(missing[0]!, /spec\.incomingAuth\.oidcConfig\.inline\.audience/);
  const notUrl = inlineProblems('issuer: "id.example.com", clientId: vmcp, audience: x');
  assert.match(notUrl.join('\n'), /inline\.issuer: must be an absolute https URL/);
  const http = inlineProblems('issuer: "http://id.example.com", clientId: vmcp, audience: x');
  assert.match(http.join('\n'), /inline\.issuer: must use https: plain http is allowed only for loopback hosts/);
});
