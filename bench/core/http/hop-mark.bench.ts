/**
 * What the loop guard (core/http/hop-mark.ts) costs a request: toward a backend, the Via value
 * (the gateway's entry alone when the client sent no Via: a constant; appended to the client's
 * otherwise); on arrival, the check, which runs only for a request that carries Via (most
 * clients send none: one comparison with undefined), here on a Via of two proxies and on one
 * of three gateways.
 */
import type { Bench } from 'tinybench';
import { HopMark } from '../../../core/http/hop-mark.ts';

const mark = new HopMark();
const PROXIES = '1.1 corp-proxy, 1.1 edge (nginx)';
const GATEWAYS = '1.1 gatehouse-0123456789abcdef, 1.1 lb, 1.1 gatehouse-fedcba9876543210, 1.1 gatehouse-00112233445566ff';

export let sink: unknown;

export default function register(bench: Bench): void {
  bench
    .add('hop-mark: Via toward a backend, no client Via', () => {
      sink = mark.via(undefined);
    })
    .add('hop-mark: Via toward a backend, after the client\'s', () => {
      sink = mark.via(PROXIES);
    })
    .add('hop-mark: check on arrival, Via of two proxies', () => {
      sink = mark.check(PROXIES);
    })
    .add('hop-mark: check on arrival, Via of three other gateways', () => {
      sink = mark.check(GATEWAYS);
    });
}
