/**
 * `spec.passthroughHeaders` of the VirtualMCPServer: header names, kept lower case and once; the
 * client's credentials and the headers the gateway writes itself toward a backend are refused,
 * each problem at its YAML path; identity and proxy headers may be named (that is its purpose).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatProblem } from '../../core/config/problems.ts';
import { validateVmcpText } from '../../core/config/vmcp-config.ts';

function vmcp(passthrough: string | null): string {
  return `apiVersion: gatehouse.dev/v1alpha1
kind: MCPGroup
metadata: {name: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: MCPServer
metadata: {name: alpha}
spec: {url: "http://127.0.0.1:9100/mcp", groupRef: tools}
---
apiVersion: gatehouse.dev/v1alpha1
kind: VirtualMCPServer
metadata: {name: vmcp}
spec:
  config: {groupRef: tools}
  incomingAuth: {type: anonymous}
${passthrough === null ? '' : `  passthroughHeaders: ${passthrough}\n`}`;
}

test('absent: nothing passes through; listed names are kept lower case, once', () => {
  const none = validateVmcpText(vmcp(null), '/tmp/p.yaml');
  assert.ok(none.ok);
  assert.deepEqual(none.config.passthroughHeaders, []);
  const listed = validateVmcpText(vmcp('[X-Forwarded-User, Forwarded, X-Tenant-Id, x-forwarded-user]'), '/tmp/p.yaml');
  assert.ok(listed.ok, JSON.stringify(!listed.ok && listed.problems));
  assert.deepEqual(listed.config.passthroughHeaders, ['x-forwarded-user', 'forwarded', 'x-tenant-id']);
});

test('credentials, headers the gateway writes itself and names that are no token are refused at their YAML path', () => {
  const result = validateVmcpText(vmcp('[Authorization, Cookie, Host, Mcp-Session-Id, Accept-Encoding, X-Request-Id, Connection, "X Tenant", Proxy, Via]'), '/tmp/p.yaml');
  assert.ok(!result.ok);
  const problems = result.problems.map((p) => formatProblem(p).replace(/^\/tmp\/p\.yaml:\d+:\d+ /, ''));
  const credential = "carries the client's credential for the gateway, which never reaches a backend (a backend's credential comes from its MCPExternalAuthConfig)";
  const reserved = 'is a header the gateway sets itself toward a backend (framing, hop-by-hop, content negotiation, the MCP session): it cannot be passed through';
  assert.deepEqual(problems, [
    `VirtualMCPServer/vmcp spec.passthroughHeaders[0]: "Authorization" ${credential}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[1]: "Cookie" ${credential}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[2]: "Host" ${reserved}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[3]: "Mcp-Session-Id" ${reserved}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[4]: "Accept-Encoding" ${reserved}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[5]: "X-Request-Id" ${reserved}`,
    `VirtualMCPServer/vmcp spec.passthroughHeaders[6]: "Connection" ${reserved}`,
    'VirtualMCPServer/vmcp spec.passthroughHeaders[7]: must be an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~), got "X Tenant"',
    'VirtualMCPServer/vmcp spec.passthroughHeaders[8]: "Proxy" is never passed to a backend: a CGI backend takes it for the proxy of its own HTTP requests (httpoxy)',
    `VirtualMCPServer/vmcp spec.passthroughHeaders[9]: "Via" ${reserved}`,
  ]);
});
