/**
 * `npm run start:auth` (examples/embedded-auth): the demo identity provider, three `whoami`
 * backends and the gateway with its embedded authorization server. The official SDK client logs
 * in with its own OAuth support (the demo IdP's login form filled headlessly, the gateway's
 * consent allowed) and each backend says which credential it received.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exampleOnFreePorts, withExample } from '../helpers/example.ts';
import { HeadlessOAuthProvider } from '../auth-server/helpers/sdk-oauth.ts';
import type { Credential } from '../../examples/embedded-auth/whoami-server.ts';

const REDIRECT = 'http://127.0.0.1:7790/oauth/callback';
const LOGIN_FORM = /<form method="post" action="(\/login\/[A-Za-z0-9_-]+)">/;

describe('example: the embedded authorization server (npm run start:auth)', () => {
  it('the SDK client logs in through the demo IdP; each backend gets its own credential, never the gateway\'s token', async () => {
    const { yaml, port } = await exampleOnFreePorts('examples/embedded-auth/vmcp.yaml', [4484, 9200, 9201, 9202, 9203]);
    const gateway = `http://127.0.0.1:${port.get(4484)}`;
    const idp = `http://127.0.0.1:${port.get(9200)}`;
    await withExample('examples/embedded-auth/start.ts', 'GATEHOUSE_EXAMPLE_CONFIG', yaml, 'Gatehouse is ready', async (stdout) => {
      assert.match(stdout(), new RegExp(`connect to ${gateway}/mcp`));
      const oauth = new HeadlessOAuthProvider(REDIRECT, {
        fill: (url, body) => {
          const form = url.origin === idp ? LOGIN_FORM.exec(body) : null;
          return form === null ? null : { action: new URL(form[1]!, url), fields: { name: 'Alice Example' } };
        },
      });
      const url = new URL(`${gateway}/mcp`);
      await assert.rejects(new Client({ name: 'example-test', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(url, { authProvider: oauth })), (err: unknown) => err instanceof UnauthorizedError);
      const code = oauth.landed?.searchParams.get('code');
      assert.ok(code !== null && code !== undefined, `the login ended at ${oauth.landed?.href}`);
      const transport = new StreamableHTTPClientTransport(url, { authProvider: oauth });
      await transport.finishAuth(code);
      const gatewayToken = oauth.saved!.access_token;

      const client = new Client({ name: 'example-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(url, { authProvider: oauth }));
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name).sort();
        assert.deepEqual(tools, ['plain_whoami', 'profile_whoami', 'reports_whoami']);
        const received = async (tool: string): Promise<Credential> => {
          const result = await client.callTool({ name: tool, arguments: {} });
          assert.ok(!JSON.stringify(result).includes(gatewayToken));
          return (result.structuredContent as { credential: Credential }).credential;
        };

        const profile = await received('profile_whoami');
        assert.equal(profile.kind, 'opaque', 'the demo IdP\'s own access token');
        assert.deepEqual(profile.userinfo, { sub: 'user-alice-example', name: 'Alice Example', email: 'user-alice-example@demo.example' });

        const reports = await received('reports_whoami');
        assert.equal(reports.kind, 'jwt');
        assert.equal(reports.issuer, idp, 'minted by the demo IdP as STS, not the gateway');
        assert.equal(reports.audience, 'reports-api');
        assert.equal(reports.subject, 'user-alice-example');

        assert.deepEqual(await received('plain_whoami'), { kind: 'none' });
      } finally {
        await client.close();
      }
    });
  });
});
