import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../core/base/errors.ts';
import { GatewayMetrics } from '../../core/observe/metrics.ts';
import { Router } from '../../core/server/router.ts';

const metrics = new GatewayMetrics({ processMetrics: false });
const handler = () => undefined;

describe('Router', () => {
  const router = new Router();
  router.add({ method: 'GET', path: '/.well-known/jwks.json', auth: false, handler }, 'a', metrics.route('x'));
  router.add({ method: ['GET', 'PUT', 'DELETE'], path: '/v1/sources/:name', handler }, 'b', metrics.route('y'));
  router.add({ method: 'GET', path: '/:registry/v0.1/servers/:name/versions/:version', handler }, 'b', metrics.route('z'));

  it('finds static routes, with HEAD served by GET', () => {
    assert.equal(router.find('GET', '/.well-known/jwks.json')!.route.plugin, 'a');
    assert.equal(router.find('HEAD', '/.well-known/jwks.json')!.route.auth, false);
    assert.equal(router.find('GET', '/nothing'), null);
  });

  it('matches params and percent-decodes them (names with a slash arrive as %2F)', () => {
    const match = router.find('GET', '/main/v0.1/servers/io.github.acme%2Fweather/versions/1.0.0')!;
    assert.deepEqual(match.params, { registry: 'main', name: 'io.github.acme/weather', version: '1.0.0' });
    assert.equal(match.route.auth, true, 'routes require auth unless they opt out');
  });

  it('answers a known path with the wrong method with 405 and Allow', () => {
    assert.throws(() => router.find('POST', '/v1/sources/x'), (err: GatewayError) => err.status === 405 && err.headers?.allow === 'GET, HEAD, PUT, DELETE');
  });

  it('refuses malformed percent-encoding with 400', () => {
    assert.throws(() => router.find('GET', '/v1/sources/%E0%A4%A'), (err: GatewayError) => err.status === 400 && /percent-encoding/.test(err.description));
  });

  it('refuses a second plugin claiming the same route', () => {
    assert.throws(() => router.add({ method: 'GET', path: '/.well-known/jwks.json', handler }, 'c', metrics.route('x')), /already served by a/);
  });
});
