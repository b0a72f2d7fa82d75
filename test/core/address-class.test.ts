/**
 * The address classifier (core/http/address-class.ts): every class on IPv4 and IPv6, the IPv6
 * forms that carry an IPv4 address judged as it, what is not an address, CIDR ranges (parsed,
 * refused with a reason, matched), and properties against Node's own parsers (isIP, the URL
 * parser's IPv6 serialization).
 */
import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { addressBytes, addressClass, classOfBytes, inCidr, parseCidr, type AddressClass, type Cidr } from '../../core/http/address-class.ts';

function expectClass(expected: AddressClass | null, addresses: readonly string[]): void {
  for (const address of addresses) assert.equal(addressClass(address), expected, address);
}

function cidr(text: string): Cidr {
  const parsed = parseCidr(text);
  if (typeof parsed === 'string') assert.fail(`${text}: ${parsed}`);
  return parsed;
}

describe('address classes, IPv4', () => {
  it('loopback, unspecified, link-local, private, metadata, multicast, reserved, and public', () => {
    expectClass('loopback', ['127.0.0.1', '127.255.255.254', '127.1.2.3']);
    expectClass('unspecified', ['0.0.0.0', '0.1.2.3', '0.255.255.255']);
    expectClass('link-local', ['169.254.0.1', '169.254.255.255', '169.254.169.253']);
    expectClass('metadata', ['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16']);
    expectClass('private', ['10.0.0.0', '10.255.255.255', '172.16.0.1', '172.31.255.255', '192.168.0.1', '100.64.0.1', '100.127.255.255']);
    expectClass('multicast', ['224.0.0.1', '239.255.255.255']);
    expectClass('reserved', ['240.0.0.1', '255.255.255.255', '192.0.0.8', '192.0.2.1', '198.51.100.7', '203.0.113.9', '198.18.0.1', '198.19.255.255', '192.88.99.1']);
    expectClass(null, ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.0', '169.253.0.1', '192.167.0.1', '198.20.0.0', '223.255.255.255', '168.63.129.17']);
  });

  it('edges of each range', () => {
    expectClass(null, ['9.255.255.255', '11.0.0.0', '126.255.255.255', '128.0.0.0', '192.0.1.0', '192.0.3.0', '198.51.99.255', '203.0.114.0']);
    expectClass('private', ['10.0.0.0', '172.16.0.0', '192.168.255.255']);
  });
});

describe('address classes, IPv6', () => {
  it('loopback, unspecified, link-local (zones too), unique-local, site-local, multicast', () => {
    expectClass('loopback', ['::1', '0:0:0:0:0:0:0:1', '[::1]']);
    expectClass('unspecified', ['::', '0:0:0:0:0:0:0:0']);
    expectClass('link-local', ['fe80::1', 'fe80::1%eth0', 'FE80::ABCD', 'febf:ffff::1']);
    expectClass('private', ['fc00::1', 'fd12:3456:789a::1', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fec0::1']);
    expectClass('metadata', ['fd00:ec2::254', 'fd00:0ec2:0:0:0:0:0:254']);
    expectClass('multicast', ['ff02::1', 'ff0e::1']);
    expectClass(null, ['2001:4860:4860::8888', '2606:4700:4700::1111', '2a00:1450:4001::1', '[2001:4860:4860::8888]']);
  });

  it('reserved: documentation, benchmarking, Teredo, discard-only, local-use NAT64, and all outside 2000::/3', () => {
    expectClass('reserved', ['2001:db8::1', '3fff::1', '2001:2::1', '2001::1', '2001:0:4136:e378::1', '100::1', '64:ff9b:1::a00:1', '4000::1', '1::1', '::1:0:0:0']);
  });

  it('the forms that carry an IPv4 address are judged as that address', () => {
    expectClass('loopback', ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:7F00:0001', '::127.0.0.1', '64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::', '::ffff:0:127.0.0.1', '0:0:0:0:0:ffff:127.0.0.1']);
    expectClass('metadata', ['::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::1', '::ffff:0:a9fe:a9fe']);
    expectClass('private', ['::ffff:10.0.0.5', '::ffff:a00:5', '::10.0.0.5', '64:ff9b::10.0.0.5', '2002:a00:5::', '::ffff:192.168.1.1']);
    expectClass('unspecified', ['::ffff:0.0.0.0', '::0.0.0.2']);
    expectClass(null, ['::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']);
  });

  it('property: every IPv4 address has the class of its mapped, NAT64, 6to4 and SIIT forms', () => {
    const hex = (a: number, b: number): string => ((a << 8) | b).toString(16);
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), ([a, b, c, d]) => {
        const v4 = `${a}.${b}.${c}.${d}`;
        const expected = addressClass(v4);
        for (const form of [`::ffff:${v4}`, `::ffff:${hex(a, b)}:${hex(c, d)}`, `64:ff9b::${v4}`, `2002:${hex(a, b)}:${hex(c, d)}::`, `::ffff:0:${v4}`]) {
          assert.equal(addressClass(form), expected, `${form} vs ${v4}`);
        }
      }),
      { seed: 1914, numRuns: 3000 },
    );
  });
});

describe('what is not an address', () => {
  it('is undefined: names, bad quads, leading zeros, bad groups, two ::', () => {
    for (const text of [
      '', 'localhost', 'example.com', '1.2.3', '1.2.3.4.5', '256.0.0.1', '01.2.3.4', '1.2.3.04', '1..2.3', '1.2.3.4 ', ' 1.2.3.4', '0x7f.0.0.1', '2130706433',
      ':::', '1::2::3', '1:2:3:4:5:6:7', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7:8::', ':1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:', '12345::', 'g::1', '::ffff:1.2.3', '::1.2.3.4:5',
      '1.2.3.4::', '[::1', '::1]', '1.2.3.4:80',
    ]) {
      assert.equal(addressClass(text), undefined, JSON.stringify(text));
    }
  });

  it('property: an address is read exactly when Node says it is one (isIP), on strings of address characters', () => {
    const chars = fc.constantFrom(...'0123456789abcdefABCDEF:.'.split(''));
    fc.assert(
      fc.property(fc.string({ unit: chars, maxLength: 45 }), (text) => {
        assert.equal(addressBytes(text) !== null, isIP(text) !== 0, JSON.stringify(text));
      }),
      { seed: 77, numRuns: 20000 },
    );
  });

  it('property: the 16 bytes of any IPv6 address survive the URL parser\'s form of it and the full form', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (bytes) => {
        const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
        const full = groups.join(':');
        const shortest = new URL(`http://[${full}]/`).hostname;
        assert.deepEqual(addressBytes(full), bytes, full);
        assert.deepEqual(addressBytes(shortest), bytes, shortest);
        assert.equal(classOfBytes(bytes), addressClass(shortest));
      }),
      { seed: 4291, numRuns: 3000 },
    );
  });
});

describe('CIDR ranges', () => {
  it('parses IPv4, IPv6 and bare addresses, and matches their addresses in every form', () => {
    const loopback = cidr('127.0.0.0/8');
    assert.ok(inCidr(addressBytes('127.0.0.1')!, loopback));
    assert.ok(inCidr(addressBytes('::ffff:127.9.9.9')!, loopback), 'the mapped form is the same address');
    assert.ok(!inCidr(addressBytes('128.0.0.1')!, loopback));
    const one = cidr('10.1.2.3');
    assert.ok(inCidr(addressBytes('10.1.2.3')!, one) && !inCidr(addressBytes('10.1.2.4')!, one));
    const odd = cidr('172.16.0.0/12');
    assert.ok(inCidr(addressBytes('172.31.255.255')!, odd) && !inCidr(addressBytes('172.32.0.0')!, odd));
    const ula = cidr('fd00::/8');
    assert.ok(inCidr(addressBytes('fd12::1')!, ula) && !inCidr(addressBytes('fc00::1')!, ula));
    const all = cidr('0.0.0.0/0');
    assert.ok(inCidr(addressBytes('8.8.8.8')!, all) && !inCidr(addressBytes('2001:db8::1')!, all), 'IPv4 /0 is every IPv4 address, no IPv6 one');
    assert.ok(inCidr(addressBytes('2001:db8::1')!, cidr('::/0')));
    assert.ok(inCidr(addressBytes('fe80::1%eth0')!, cidr('fe80::/10')));
  });

  it('refuses, with the reason: not an address, a bad prefix, bits set past the prefix', () => {
    assert.match(parseCidr('localhost/8') as string, /is not an IPv4 or IPv6 address/);
    assert.match(parseCidr('[::1]/128') as string, /is not an IPv4 or IPv6 address/);
    assert.match(parseCidr('10.0.0.0/33') as string, /from 0 to 32/);
    assert.match(parseCidr('fd00::/129') as string, /from 0 to 128/);
    assert.match(parseCidr('10.0.0.0/08') as string, /not a number/);
    assert.match(parseCidr('10.0.0.0/') as string, /not a number/);
    assert.match(parseCidr('10.0.0.0/8/8') as string, /not a number/);
    assert.equal(parseCidr('10.0.0.1/8'), '10.0.0.1/8 has bits set past its /8 prefix: write the range\'s first address (10.0.0.0/8)');
    assert.match(parseCidr('fd00::1/8') as string, /write the range's first address \(fd00::\/8\)/);
  });
});
