/**
 * The loop guard's parts (core/http/hop-mark.ts, core/http/request-head.ts): the Via a request to a
 * backend carries, a request naming this gateway refused as a loop (508), one through too many
 * gateways refused, others (other gateways, other proxies, forged look-alikes) served; Via read
 * from every line of a request, and never forwarded as the client sent it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HopMark, MAX_GATEWAY_HOPS } from '../../core/http/hop-mark.ts';
import { RequestHead } from '../../core/http/request-head.ts';

describe('HopMark', () => {
  it('a random pseudonym per gateway, appended to the Via a request came with', () => {
    const mark = new HopMark();
    assert.match(mark.pseudonym, /^gatehouse-[0-9a-f]{16}$/);
    assert.notEqual(mark.pseudonym, new HopMark().pseudonym, 'two gateways in one process are two');
    assert.equal(mark.entry, `1.1 ${mark.pseudonym}`);
    assert.equal(mark.via(undefined), mark.entry);
    assert.equal(mark.via('1.0 corp-proxy, 1.1 edge (nginx)'), `1.0 corp-proxy, 1.1 edge (nginx), ${mark.entry}`);
  });

  it('refuses a request whose Via names this gateway (508 loop_detected), wherever the entry is', () => {
    const mark = new HopMark('gatehouse-00112233445566ff');
    for (const via of ['1.1 gatehouse-00112233445566ff', '1.1 lb, 1.1 gatehouse-00112233445566ff', '1.1 gatehouse-00112233445566ff, 1.1 gatehouse-aaaaaaaaaaaaaaaa, 1.1 envoy']) {
      const refusal = mark.check(via);
      assert.equal(refusal?.code, 'loop_detected', via);
      assert.equal(refusal?.status, 508);
      assert.match(refusal?.description ?? '', /has already passed through this gateway .*leads back to the gateway itself/);
      assert.throws(() => mark.refuseLoop(via), { code: 'loop_detected' });
    }
  });

  it('serves a request through other gateways and proxies, up to the bound of gateways in a row', () => {
    const mark = new HopMark('gatehouse-00112233445566ff');
    const others = (n: number): string => Array.from({ length: n }, (_, i) => `1.1 gatehouse-${i.toString(16).padStart(16, 'a')}`).join(', ');
    assert.equal(mark.check('1.1 nginx, 1.0 squid (squid/6.1)'), null);
    assert.equal(mark.check(others(MAX_GATEWAY_HOPS - 1)), null, `${MAX_GATEWAY_HOPS - 1} gateways before this one`);
    const refused = mark.check(others(MAX_GATEWAY_HOPS));
    assert.equal(refused?.code, 'loop_detected');
    assert.match(refused?.description ?? '', new RegExp(`already passed through ${MAX_GATEWAY_HOPS} Gatehouse gateways`));
    assert.equal(mark.check('1.1 gatehouse-00112233445566f'), null, 'a look-alike, one digit short');
    assert.equal(mark.check('1.1 notgatehouse-0011223344556677'.repeat(20)), null, 'not a pseudonym: no count');
    mark.refuseLoop('1.1 nginx');
  });
});

describe('RequestHead: Via', () => {
  it('joins every Via line, in order, and keeps it out of the forwarded headers', () => {
    const head = new RequestHead(['Via', '1.0 a', 'Accept', '*/*', 'VIA', '1.1 b, 1.1 c', 'via', '1.1 d']);
    assert.equal(head.via, '1.0 a, 1.1 b, 1.1 c, 1.1 d');
    assert.deepEqual(head.forward, ['accept', '*/*']);
    assert.equal(head.identity, null);
    assert.equal(new RequestHead(['Accept', '*/*']).via, undefined);
  });

  it('is read even when the client names it in Connection (it cannot hide its Via)', () => {
    const head = new RequestHead(['Connection', 'close, via', 'Via', '1.1 gatehouse-00112233445566ff']);
    assert.equal(head.via, '1.1 gatehouse-00112233445566ff');
  });
});
