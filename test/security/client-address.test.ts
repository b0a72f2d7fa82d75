/**
 * Who a request comes from, for per-client limits: the socket's address, or, only behind a proxy
 * listed in `server.trustedProxies`, the nearest untrusted hop its X-Forwarded-For names. A
 * client cannot pick its own address by sending the header; an IPv6 client counts by its /64.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_AUTH_SERVER_RATE_LIMITS } from '../../core/config/auth-server-limits.ts';
import { ClientAddresses, limitKey, parseRange } from '../../core/http/client-address.ts';
import { startAuthGateway, type AuthGateway } from '../auth-server/helpers/setup.ts';

const REGISTRATIONS = DEFAULT_AUTH_SERVER_RATE_LIMITS.registration.perKey.maxTokens;

describe('client addresses', () => {
  it('without trusted proxies, X-Forwarded-For is ignored', () => {
    const none = new ClientAddresses([]);
    assert.equal(none.of('203.0.113.9', '198.51.100.1'), '203.0.113.9');
    assert.equal(none.of('::ffff:203.0.113.9', undefined), '203.0.113.9', 'an IPv4-mapped socket address is the IPv4 address');
  });

  it('behind trusted proxies, the nearest untrusted hop, read from the right', () => {
    const lb = new ClientAddresses(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
    assert.equal(lb.of('10.1.2.3', '198.51.100.7'), '198.51.100.7');
    assert.equal(lb.of('10.1.2.3', '1.1.1.1, 198.51.100.7'), '198.51.100.7', 'what the client wrote itself (left) is not believed');
    assert.equal(lb.of('10.1.2.3', '198.51.100.7, 10.9.9.9'), '198.51.100.7', 'past every trusted hop');
    assert.equal(lb.of('10.1.2.3', '198.51.100.7,fd00::1'), '198.51.100.7');
    assert.equal(lb.of('10.1.2.3', 'evil\r\nx, 10.9.9.9'), '10.9.9.9', 'a hop that is not an address stops the walk at the proxy that passed it on');
    assert.equal(lb.of('10.1.2.3', 'not-an-ip'), '10.1.2.3');
    assert.equal(lb.of('10.1.2.3', '10.4.4.4'), '10.4.4.4', 'all trusted: the farthest');
    assert.equal(lb.of('203.0.113.9', '198.51.100.7'), '203.0.113.9', 'from an untrusted socket the header counts for nothing');
    assert.equal(lb.of('::ffff:127.0.0.1', '2001:db8::5'), '2001:db8::5');
  });

  it('ranges are addresses or CIDR ranges', () => {
    for (const ok of ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', '0.0.0.0/0']) assert.notEqual(parseRange(ok), null, ok);
    for (const bad of ['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/a', 'example.com', '::1/129', '10.0.0.0/8/8', '']) assert.equal(parseRange(bad), null, bad);
  });

  it('an IPv6 client is limited by its /64', () => {
    assert.equal(limitKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(limitKey('2001:db8:1:2::99'), '2001:db8:1:2::/64');
    assert.equal(limitKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(limitKey('198.51.100.7'), '198.51.100.7');
  });
});

describe('client addresses: the authorization server\'s registration limit', () => {
  let direct: AuthGateway;
  let proxied: AuthGateway;

  before(async () => {
    direct = await startAuthGateway();
    proxied = await startAuthGateway({ spec: '  server:\n    trustedProxies: ["127.0.0.1", "::1"]' });
  });
  after(async () => {
    await direct.close();
    await proxied.close();
  });

  const register = (issuer: string, forwardedFor: string): Promise<Response> =>
    fetch(`${issuer}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:7000/cb'] }) });

  it('a client cannot reset its limit by naming another address in X-Forwarded-For', async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= REGISTRATIONS; i++) statuses.push((await register(direct.issuer, `198.51.100.${i}`)).status);
    assert.deepEqual(statuses, [...Array<number>(REGISTRATIONS).fill(201), 429]);
  });

  it('behind a trusted proxy each client it names has a limit of its own', async () => {
    for (let i = 0; i < REGISTRATIONS; i++) assert.equal((await register(proxied.issuer, '198.51.100.1')).status, 201);
    assert.equal((await register(proxied.issuer, '198.51.100.1')).status, 429);
    assert.equal((await register(proxied.issuer, '1.2.3.4, 198.51.100.1')).status, 429, 'what the client itself prepends does not help');
    assert.equal((await register(proxied.issuer, '198.51.100.2')).status, 201, 'another client behind the same proxy');
  });
});
