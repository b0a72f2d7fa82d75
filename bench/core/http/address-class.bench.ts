/**
 * The address classifier (core/http/address-class.ts), which a guarded backend's every connect
 * asks once per address its name resolves to, and once more for the connected address: a public
 * and a private IPv4 address, a public IPv6 one, and an IPv4-mapped one. Beside it, one check of a
 * node:net BlockList (what the address guard used before, per range list), for scale.
 */
import { BlockList } from 'node:net';
import type { Bench } from 'tinybench';
import { addressClass } from '../../../core/http/address-class.ts';

const list = new BlockList();
list.addSubnet('10.0.0.0', 8, 'ipv4');
list.addSubnet('172.16.0.0', 12, 'ipv4');
list.addSubnet('192.168.0.0', 16, 'ipv4');

export let sink: unknown;

export default function register(bench: Bench): void {
  for (const address of ['93.184.216.34', '10.0.0.5', '2606:4700:4700::1111', '::ffff:10.0.0.5']) {
    bench.add(`address-class: ${address}`, () => {
      sink = addressClass(address);
    });
  }
  bench.add('for scale: BlockList.check of 93.184.216.34 (three IPv4 ranges)', () => {
    sink = list.check('93.184.216.34', 'ipv4');
  });
}
