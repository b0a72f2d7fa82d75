import assert from 'node:assert/strict';
import { RequestHead } from '../../core/http/request-head.ts';
import { describe, it } from 'node:test';
import { OriginGuard } from '../../core/http/origin-guard.ts';

function request(headers: Record<string, string>): RequestHead {
  return new RequestHead(Object.entries(headers).flat());
}

describe('OriginGuard (DNS rebinding)', () => {
  const guard = new OriginGuard({
    host: '127.0.0.1',
    port: 4483,
    publicUrls: ['https://mcp.example.com/mcp'],
    allowedHosts: ['gateway.internal:8080'],
    allowedOrigins: ['https://app.example.com/'],
  });

  it('accepts the gateway\'s own names, the public URL\'s host and configured hosts', () => {
    for (const host of ['127.0.0.1:4483', 'localhost:4483', 'LOCALHOST:4483', '[::1]:4483', 'mcp.example.com', 'mcp.example.com:443', 'gateway.internal:8080']) {
      assert.equal(guard.check(request({ host })), null, host);
    }
  });

  it('refuses a Host that is not a name of this gateway (a rebound DNS name)', () => {
    const err = guard.check(request({ host: 'attacker.example:4483' }));
    assert.equal(err?.status, 403);
    assert.equal(err?.code, 'forbidden_host');
    assert.equal(guard.check(request({ host: '127.0.0.1:9999' }))?.code, 'forbidden_host');
  });

  it('accepts own and configured origins, refuses others and "null"', () => {
    assert.equal(guard.check(request({ host: '127.0.0.1:4483', origin: 'http://localhost:4483' })), null);
    assert.equal(guard.check(request({ host: '127.0.0.1:4483', origin: 'https://app.example.com' })), null);
    assert.equal(guard.check(request({ host: '127.0.0.1:4483', origin: 'https://evil.example' }))?.code, 'forbidden_origin');
    assert.equal(guard.check(request({ host: '127.0.0.1:4483', origin: 'null' }))?.code, 'forbidden_origin');
  });

  it('accepts anything with the wildcards', () => {
    const open = new OriginGuard({ host: '127.0.0.1', port: 1, publicUrls: [], allowedHosts: ['*'], allowedOrigins: ['*'] });
    assert.equal(open.check(request({ host: 'anything:1', origin: 'https://any.where' })), null);
  });
});
