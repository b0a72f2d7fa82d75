/**
 * RFC 9728 URL construction (as the MCP authorization spec uses it) and the document's shape.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Context } from '../../core/plugin-api/context.ts';
import { Reply } from '../../core/plugin-api/reply.ts';
import {
  protectedResourceMetadata,
  protectedResourceRoutes,
  resourceMetadataPath,
  resourceMetadataUrl,
} from '../../plugins/incoming-auth/resource-metadata.ts';

describe('resourceMetadataUrl', () => {
  it('inserts the well-known segment between the host and the path', () => {
    assert.equal(resourceMetadataUrl('http://127.0.0.1:4483/mcp'), 'http://127.0.0.1:4483/.well-known/oauth-protected-resource/mcp');
    assert.equal(resourceMetadataUrl('https://mcp.example.com/tenant/a/mcp'), 'https://mcp.example.com/.well-known/oauth-protected-resource/tenant/a/mcp');
  });

  it('uses the root form for a resource without a path, and drops a terminating slash', () => {
    assert.equal(resourceMetadataUrl('https://mcp.example.com'), 'https://mcp.example.com/.well-known/oauth-protected-resource');
    assert.equal(resourceMetadataUrl('https://mcp.example.com/'), 'https://mcp.example.com/.well-known/oauth-protected-resource');
    assert.equal(resourceMetadataUrl('https://mcp.example.com/mcp/'), 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp');
  });

  it('keeps the port and a query', () => {
    assert.equal(resourceMetadataUrl('https://mcp.example.com:8443/mcp?t=1'), 'https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp?t=1');
    assert.equal(resourceMetadataPath('https://mcp.example.com:8443/mcp?t=1'), '/.well-known/oauth-protected-resource/mcp');
  });
});

describe('protectedResourceMetadata', () => {
  it('has resource, authorization_servers and bearer_methods_supported; scopes only when configured', () => {
    assert.deepEqual(protectedResourceMetadata({ resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://id.example.com'], scopes: [] }), {
      resource: 'https://mcp.example.com/mcp',
      authorization_servers: ['https://id.example.com'],
      bearer_methods_supported: ['header'],
    });
    assert.deepEqual(
      protectedResourceMetadata({ resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://id.example.com'], scopes: ['mcp:tools', 'openid'] }),
      {
        resource: 'https://mcp.example.com/mcp',
        authorization_servers: ['https://id.example.com'],
        bearer_methods_supported: ['header'],
        scopes_supported: ['mcp:tools', 'openid'],
      },
    );
  });
});

describe('protectedResourceRoutes', () => {
  const doc = protectedResourceMetadata({ resource: 'https://mcp.example.com/mcp', authorizationServers: ['https://id.example.com'], scopes: [] });
  const routes = protectedResourceRoutes('https://mcp.example.com/mcp', doc);

  it('serves GET and OPTIONS at the path-inserted and the root form, without authentication', () => {
    const served = routes.map((r) => `${String(r.method)} ${r.path} auth=${String(r.auth)}`).sort();
    assert.deepEqual(served, [
      'GET /.well-known/oauth-protected-resource auth=false',
      'GET /.well-known/oauth-protected-resource/mcp auth=false',
      'OPTIONS /.well-known/oauth-protected-resource auth=false',
      'OPTIONS /.well-known/oauth-protected-resource/mcp auth=false',
    ]);
  });

  it('answers the document as JSON with CORS headers, and a 204 preflight', async () => {
    const get = routes.find((r) => r.method === 'GET')!;
    const reply = await get.handler({} as Context);
    assert.ok(reply instanceof Reply);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['content-type'], 'application/json');
    assert.equal(reply.headers['access-control-allow-origin'], '*');
    assert.deepEqual(JSON.parse(String(reply.body)), doc);
    const options = routes.find((r) => r.method === 'OPTIONS')!;
    const preflight = await options.handler({} as Context);
    assert.ok(preflight instanceof Reply);
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers['access-control-allow-methods'] ?? '', /GET/);
  });

  it('serves only the root form once when the resource has no path', () => {
    const rootOnly = protectedResourceRoutes('https://mcp.example.com', doc);
    assert.deepEqual([...new Set(rootOnly.map((r) => r.path))], ['/.well-known/oauth-protected-resource']);
  });
});
