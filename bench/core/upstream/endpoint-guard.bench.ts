/**
 * What the endpoint guard (core/upstream/endpoint-guard.ts) adds to one connect of a registry-fed
 * backend: its `lookup` around the resolver (here a resolver that answers at once, so what is
 * measured is the guard's filtering, not DNS), and the check of the connected address; with no
 * range listed and with three. The pools of the file's own backends have no guard: their connects
 * and requests run no line of it (pool.ts: `#shut` replaces the `#closed` flag the dispatch read
 * already; backend-connection.ts: `owner.lookup === undefined` and `owner.guard !== null`, two
 * comparisons per connect, none per request).
 */
import type { LookupAddress } from 'node:dns';
import type { Bench } from 'tinybench';
import type { LookupFunction } from '../../../core/http/address-guard.ts';
import type { EndpointPolicy } from '../../../core/plugin-api/backend.ts';
import { EndpointGuard } from '../../../core/upstream/endpoint-guard.ts';

const ANSWER: LookupAddress[] = [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 }];
const resolve: LookupFunction = (_hostname, _options, callback) => callback(null, ANSWER);
const POLICY: EndpointPolicy = { where: 'MCPGroup/team spec.registry', allowPrivate: false, allowedCidrs: [] };
const plain = new EndpointGuard('io-x', POLICY, null, resolve);
const listed = new EndpointGuard('io-x', { ...POLICY, allowedCidrs: ['10.20.0.0/16', '192.168.7.0/24', 'fd00:1::/64'] }, null, resolve);
const OPTIONS = { all: true, family: 0 } as const;

export let sink: unknown;
const keep = (err: unknown, addresses: unknown): void => {
  sink = err ?? addresses;
};

export default function register(bench: Bench): void {
  bench
    .add('endpoint-guard: the resolver alone (baseline)', () => resolve('example.com', OPTIONS, keep))
    .add("endpoint-guard: guarded lookup, two public addresses", () => plain.lookup('example.com', OPTIONS, keep))
    .add('endpoint-guard: guarded lookup, two public addresses, three ranges listed', () => listed.lookup('example.com', OPTIONS, keep))
    .add('endpoint-guard: check of the connected address (public)', () => {
      sink = plain.check('93.184.216.34', 'example.com');
    })
    .add('endpoint-guard: check of the connected address (listed private, three ranges)', () => {
      sink = listed.check('10.20.3.4', 'example.com');
    });
}
