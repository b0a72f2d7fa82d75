/**
 * Gateways with `incomingAuth.type: oidc` for the end-to-end tests, and raw HTTP helpers for
 * requests the SDK client never sends (two Authorization headers, tokens in the query string).
 */
import { request as httpRequest, type Agent, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { loadVmcpConfig } from '../../../core/config/vmcp-config.ts';
import { createLogger } from '../../../core/observe/log.ts';
import { startVmcp, type RunningVmcp } from '../../../core/vmcp/virtual-mcp-server.ts';
import { vmcpBuiltins } from '../../../plugins/cli/vmcp-builtins.ts';
import { vmcpYaml, writeConfig, type TestBackend } from '../../helpers/gateway.ts';
import { freePort } from '../../fixtures/processes.ts';

export interface InlineOidcYaml {
  issuer: string;
  audience: string;
  resourceUrl: string;
  clientId?: string;
  /** Name of a Secret document (key `clientSecret`) to reference as `clientSecretRef`. */
  clientSecretName?: string;
  scopes?: string[];
}

/** The `incomingAuth:` block (indented for `spec:`) of an inline OIDC config. */
export function inlineOidcYaml(o: InlineOidcYaml): string {
  return [
    '  incomingAuth:',
    '    type: oidc',
    `    resourceUrl: "${o.resourceUrl}"`,
    ...(o.scopes ? [`    scopes: [${o.scopes.map((s) => JSON.stringify(s)).join(', ')}]`] : []),
    '    oidcConfig:',
    '      type: inline',
    '      inline:',
    `        issuer: "${o.issuer}"`,
    `        clientId: ${o.clientId ?? 'gatehouse'}`,
    `        audience: "${o.audience}"`,
    ...(o.clientSecretName ? [`        clientSecretRef: {name: ${o.clientSecretName}, key: clientSecret}`] : []),
  ].join('\n');
}

/** A `Secret` document holding `clientSecret`. */
export function secretYaml(name: string, clientSecret: string): string {
  return `apiVersion: v1\nkind: Secret\nmetadata: {name: ${name}}\ntype: Opaque\nstringData:\n  clientSecret: ${JSON.stringify(clientSecret)}`;
}

/**
 * A gateway on a port chosen before its config is written, so that `resourceUrl` is its real
 * URL (what an MCP client's RFC 9728 discovery checks).
 */
export async function startGatewayAt(
  backends: TestBackend[],
  incomingAuth: (resourceUrl: string) => string,
  documents?: string,
): Promise<RunningVmcp> {
  const port = await freePort();
  const resourceUrl = `http://127.0.0.1:${port}/mcp`;
  const file = await writeConfig(vmcpYaml({ backends, incomingAuth: incomingAuth(resourceUrl), ...(documents ? { documents } : {}) }));
  const config = await loadVmcpConfig(file);
  const level = (process.env.GATEHOUSE_TEST_LOG as 'debug' | undefined) ?? 'silent';
  return startVmcp({ config, port, log: createLogger(level), builtins: vmcpBuiltins(config) });
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: unknown;
  /** The local port of the connection used (same port: same keep-alive connection). */
  localPort: number | undefined;
}

/** One request with node:http: header arrays are sent as repeated header lines. */
export function rawRequest(url: string, options: { method?: string; headers?: OutgoingHttpHeaders; body?: string; agent?: Agent } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers ?? {}, ...(options.agent ? { agent: options.agent } : {}) }, (res) => {
      const localPort = res.socket.localPort;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, localPort });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The auth-params of a `WWW-Authenticate: Bearer ...` value. */
export function challengeParams(header: string | undefined): Record<string, string> {
  if (header === undefined) return {};
  if (!header.startsWith('Bearer ')) throw new Error(`not a Bearer challenge: ${header}`);
  const params: Record<string, string> = {};
  for (const m of header.slice(7).matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) params[m[1]!] = m[2]!.replace(/\\(.)/g, '$1');
  return params;
}
