/** vMCP files with claims: servers with annotations, a VirtualMCPServer with an aggregation block. */
import assert from 'node:assert/strict';
import { formatProblem } from '../../../core/config/problems.ts';
import { validateVmcpFile } from '../../../core/config/vmcp-config.ts';
import type { VmcpConfig } from '../../../core/config/vmcp-types.ts';
import { writeConfig } from '../../helpers/gateway.ts';

interface Server {
  readonly name: string;
  readonly annotations?: string;
}

/** A file: an MCPGroup, the servers (annotations as YAML flow text), the VirtualMCPServer with `aggregation` (YAML block text under it). */
export function file(servers: readonly Server[], aggregation: string, incoming = '{type: anonymous}'): string {
  const docs = [
    'apiVersion: gatehouse.dev/v1alpha1\nkind: MCPGroup\nmetadata: {name: tools}',
    ...servers.map(
      (s, i) =>
        `apiVersion: gatehouse.dev/v1alpha1\nkind: MCPServer\nmetadata:\n  name: ${s.name}\n` +
        (s.annotations === undefined ? '' : `  annotations:\n${s.annotations}\n`) +
        `spec: {url: "http://127.0.0.1:${9101 + i}/mcp", groupRef: tools}`,
    ),
    `apiVersion: gatehouse.dev/v1alpha1\nkind: VirtualMCPServer\nmetadata: {name: vmcp}\nspec:\n  incomingAuth: ${incoming}\n  config:\n    groupRef: tools\n    aggregation:\n${aggregation}`,
  ];
  return docs.join('\n---\n') + '\n';
}

export const TWO = [{ name: 'github' }, { name: 'jira' }];

export async function configOf(text: string): Promise<VmcpConfig> {
  const result = await validateVmcpFile(await writeConfig(text));
  assert.ok(result.ok, result.ok ? '' : result.problems.map(formatProblem).join('\n'));
  return result.config;
}
