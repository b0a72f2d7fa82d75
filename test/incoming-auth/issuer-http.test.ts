/**
 * What the issuer fetches may reach: https (or loopback http), no private addresses unless
 * allowed, loopback only for a loopback issuer; the fetch bearer token only to the issuer's
 * own origin; a response size cap.
 */
import assert from 'node:assert/strict';
import diagnostics from 'node:diagnostics_channel';
import { gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isLoopbackAddress, isLoopbackHost, isPrivateAddress, refusedAddress } from '../../core/http/address-guard.ts';
import { CHANNELS, OutboundRecord } from '../../core/index.ts';
import { IssuerHttp } from '../../plugins/incoming-auth/issuer-http.ts';
import { KeyIssuer } from './helpers/key-issuer.ts';

function http(issuer: string, allowPrivateIp = false, bearerToken?: string, maxBytes?: number): IssuerHttp {
  return new IssuerHttp({ issuer: new URL(issuer), allowPrivateIp, timeoutMs: 2000, bearerToken, ...(maxBytes ? { maxBytes } : {}) });
}

describe('address guard', () => {
  it('classifies private, link-local, unique-local and mapped addresses', () => {
    for (const a of ['10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '::']) {
      assert.ok(isPrivateAddress(a), a);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '2001:4860:4860::8888', '127.0.0.1', '::1']) assert.ok(!isPrivateAddress(a), a);
  });

  it('sees the IPv4 address inside NAT64, 6to4, IPv4-compatible and hex-mapped forms, and the other private IPv6 ranges', () => {
    for (const a of [
      '64:ff9b::10.0.0.1',
      '64:ff9b::a00:1',
      '64:ff9b::169.254.169.254',
      '2002:a00:1::',
      '2002:a9fe:a9fe::1',
      '::10.0.0.1',
      '::ffff:a00:1',
      '::FFFF:192.168.0.1',
      'fec0::1',
      '2001:0:4136:e378::1',
      '2001:db8::1',
      '100::1',
    ]) {
      assert.ok(isPrivateAddress(a), a);
      assert.match(refusedAddress(a, { allowPrivate: false, allowLoopback: true }) ?? '', /private/, a);
    }
    for (const a of ['64:ff9b::127.0.0.1', '2002:7f00:1::', '::127.0.0.1', '::ffff:7f00:1']) {
      assert.ok(isLoopbackAddress(a), a);
      assert.match(refusedAddress(a, { allowPrivate: false, allowLoopback: false }) ?? '', /loopback/, a);
    }
    for (const a of ['64:ff9b::8.8.8.8', '2002:808:808::1', '::ffff:8.8.8.8', '2606:4700:4700::1111']) {
      assert.equal(refusedAddress(a, { allowPrivate: false, allowLoopback: false }), null, a);
    }
  });

  it('property: every IPv6 form that carries an IPv4 address is judged as that address', () => {
    const hex = (a: number, b: number): string => ((a << 8) | b).toString(16);
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), ([a, b, c, d]) => {
        const v4 = `${a}.${b}.${c}.${d}`;
        const forms = [`::ffff:${v4}`, `::ffff:${hex(a, b)}:${hex(c, d)}`, `64:ff9b::${v4}`, `64:ff9b::${hex(a, b)}:${hex(c, d)}`, `2002:${hex(a, b)}:${hex(c, d)}::1`];
        if (a !== 0 || b !== 0 || c !== 0 || d > 1) forms.push(`::${v4}`);
        const policy = { allowPrivate: false, allowLoopback: false };
        const verdict = refusedAddress(v4, policy) === null;
        for (const form of forms) assert.equal(refusedAddress(form, policy) === null, verdict, `${form} vs ${v4}`);
      }),
      { seed: 6052, numRuns: 2000 },
    );
  });

  it('allows loopback only for a loopback issuer, private ranges only when allowed', () => {
    assert.match(refusedAddress('127.0.0.1', { allowPrivate: false, allowLoopback: false }) ?? '', /loopback/);
    assert.equal(refusedAddress('127.0.0.1', { allowPrivate: false, allowLoopback: true }), null);
    assert.match(refusedAddress('::ffff:127.0.0.1', { allowPrivate: false, allowLoopback: false }) ?? '', /loopback/);
    assert.match(refusedAddress('10.0.0.1', { allowPrivate: false, allowLoopback: true }) ?? '', /private/);
    assert.equal(refusedAddress('10.0.0.1', { allowPrivate: true, allowLoopback: false }), null);
    assert.equal(refusedAddress('93.184.216.34', { allowPrivate: false, allowLoopback: false }), null);
    assert.ok(isLoopbackHost('localhost') && isLoopbackHost('127.9.9.9') && isLoopbackHost('[::1]') && !isLoopbackHost('localhost.example.com'));
  });
});

describe('IssuerHttp', () => {
  it('refuses plain http off loopback, and private or loopback IP literals the policy does not allow', () => {
    const publicIssuer = http('https://id.example.com');
    assert.throws(() => publicIssuer.checkUrl(new URL('http://id.example.com/jwks')), /must use https/);
    assert.throws(() => publicIssuer.checkUrl(new URL('https://10.0.0.1/jwks')), /private/);
    assert.throws(() => publicIssuer.checkUrl(new URL('https://127.0.0.1/jwks')), /loopback/);
    assert.throws(() => publicIssuer.checkUrl(new URL('https://[fd00::1]/jwks')), /private/);
    publicIssuer.checkUrl(new URL('https://keys.example.com/jwks'));
    http('https://id.example.com', true).checkUrl(new URL('https://10.0.0.1/jwks'));
    http('http://127.0.0.1:1').checkUrl(new URL('http://127.0.0.1:2/jwks'));
  });

  it('refuses a host name that resolves to a refused address, at connect time', async () => {
    // `localhost` resolves to loopback: refused for a non-loopback issuer even though the name is not an IP literal.
    const issuer = http('https://id.example.com');
    await assert.rejects(issuer.getJson('https://localhost:65000/jwks'), /refusing to connect to localhost: .*loopback/);
    await issuer.close();
  });

  it('sends the fetch bearer token to the issuer origin only', async () => {
    const issuer = await KeyIssuer.start();
    const other = await KeyIssuer.start();
    await other.addKey('ES256');
    const client = http(issuer.url, false, 'sa-token');
    await client.getJson(`${issuer.url}/.well-known/openid-configuration`);
    await client.getJson(`${other.url}/jwks`);
    assert.deepEqual(issuer.bearers, ['sa-token']);
    assert.deepEqual(other.bearers, [undefined], 'never to another origin');
    await client.close();
    await issuer.close();
    await other.close();
  });

  it('caps the size of a response and refuses non-JSON and error statuses', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/big') res.end(JSON.stringify({ keys: 'x'.repeat(200_000) }));
      else if (req.url === '/html') res.end('<html>');
      else res.writeHead(500).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = http(base, false, undefined, 100_000);
    await assert.rejects(client.getJson(`${base}/big`), /exceeded max size/);
    await assert.rejects(client.getJson(`${base}/html`), /did not answer JSON/);
    await assert.rejects(client.getJson(`${base}/err`), /answered 500/);
    await client.close();
    server.close();
  });
});

describe('IssuerHttp thread', () => {
  /** A loopback server: `/echo` answers what it got, `/empty` a 204, `/hang` never. */
  async function server(): Promise<{ base: string; hangClosed: Promise<void>; close(): void }> {
    let hangClosed!: () => void;
    const closed = new Promise<void>((resolve) => (hangClosed = resolve));
    const srv = createServer((req, res) => {
      if (req.url === '/empty') return void res.writeHead(204).end();
      if (req.url === '/bomb') return void res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(4 * 1024 * 1024, 0x20)));
      if (req.url === '/odd') return void res.writeHead(999, { 'content-type': 'application/json' }).end('{}');
      if (req.url === '/hang') return void req.socket.once('close', hangClosed);
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        res.setHeader('x-seen', 'one');
        res.appendHeader('set-cookie', ['a=1', 'b=2']);
        res.setHeader('content-type', 'application/json');
        const trace = req.headers['x-trace'];
        const smuggled = req.headers['x-evil'] ?? req.headers['x-injected'];
        res.end(JSON.stringify({ method: req.method, contentType: req.headers['content-type'] ?? null, body, ...(trace === undefined ? {} : { trace }), ...(smuggled === undefined ? {} : { smuggled }) }));
      });
    });
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    return { base: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, hangClosed: closed, close: () => {
        srv.closeAllConnections();
        srv.close();
      },
    };
  }

  it("gives openid-client a Response of the thread's answer: status, headers, body; a form keeps its media type", async () => {
    const srv = await server();
    const client = http(srv.base);
    const res = await client.fetch(`${srv.base}/echo`, { method: 'POST', headers: { accept: 'application/json' }, body: new URLSearchParams({ grant_type: 'x', a: 'b c' }) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-seen'), 'one');
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    assert.deepEqual(await res.json(), { method: 'POST', contentType: 'application/x-www-form-urlencoded;charset=UTF-8', body: 'grant_type=x&a=b+c' });
    const empty = await client.fetch(`${srv.base}/empty`, { method: 'GET', headers: {} });
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
    await client.close();
    srv.close();
  });

  it('caps an answer once decompressed (a 4 KiB gzip body of 4 MiB), and fails an answer a Response cannot carry as a network failure', async () => {
    const srv = await server();
    const client = http(srv.base, false, undefined, 100_000);
    await assert.rejects(client.getJson(`${srv.base}/bomb`), /exceeded max size/);
    await assert.rejects(client.fetch(`${srv.base}/bomb`, { method: 'GET', headers: {} }), (err: Error) => err instanceof TypeError && err.message === 'fetch failed' && /exceeded max size/.test(String((err.cause as Error).message)));
    await assert.rejects(client.fetch(`${srv.base}/odd`, { method: 'GET', headers: {} }), (err: Error) => err instanceof TypeError && err.message === 'fetch failed');
    await client.close();
    srv.close();
  });

  it('closes clients closed together, and a closed client starts no thread', async () => {
    const srv = await server();
    const [a, b, c] = [http(srv.base), http(srv.base), http(srv.base)];
    await a.getJson(`${srv.base}/echo`);
    await Promise.all([a.close(), b.close(), c.close()]);
    await assert.rejects(a.getJson(`${srv.base}/echo`), /the issuer client is closed/);
    srv.close();
  });

  it("ends a request in the thread when the caller's signal aborts it", async () => {
    const srv = await server();
    const client = http(srv.base);
    await assert.rejects(client.fetch(`${srv.base}/hang`, { method: 'GET', headers: {}, signal: AbortSignal.timeout(200) }), { name: 'TimeoutError' });
    await srv.hangClosed; // the thread dropped the connection: nothing is left waiting
    await assert.rejects(client.fetch(`${srv.base}/echo`, { method: 'GET', headers: {}, signal: AbortSignal.abort() }), { name: 'AbortError' });
    await client.close();
    srv.close();
  });

  it('publishes each call on the outbound channels: a subscriber adds a header (never one with CR or LF), and sees the status or the failure', async () => {
    const srv = await server();
    const client = http(srv.base);
    const seen: string[] = [];
    const refused: string[] = [];
    const onStart = (message: unknown): void => {
      const record = message as OutboundRecord;
      record.setHeader('x-trace', `t-${record.method}`);
      try {
        record.setHeader('x-evil', 'a\r\nx-injected: 1');
      } catch (err) {
        refused.push((err as Error).message);
      }
      try {
        record.setHeader('authorization', 'Bearer stolen');
      } catch (err) {
        refused.push((err as Error).message);
      }
    };
    const onEnd = (message: unknown): void => void seen.push(`${(message as OutboundRecord).origin} ${(message as OutboundRecord).status}`);
    const onError = (message: unknown): void => void seen.push(`error ${(message as OutboundRecord).error}`);
    diagnostics.subscribe(CHANNELS.outboundStart, onStart);
    diagnostics.subscribe(CHANNELS.outboundEnd, onEnd);
    diagnostics.subscribe(CHANNELS.outboundError, onError);
    try {
      const { json } = await client.getJson(`${srv.base}/echo`);
      assert.deepEqual(json, { method: 'GET', contentType: null, body: '', trace: 't-GET' }, 'the added header went, the refused one did not');
      const res = await client.fetch(`${srv.base}/echo`, { method: 'POST', headers: {}, body: 'x' });
      assert.equal(((await res.json()) as { trace: string }).trace, 't-POST');
      await assert.rejects(client.fetch(`${srv.base}/hang`, { method: 'GET', headers: {}, signal: AbortSignal.timeout(100) }));
      assert.deepEqual(seen, [`${srv.base} 200`, `${srv.base} 200`, 'error TimeoutError']);
      assert.equal(refused.length, 6);
      assert.match(refused[0]!, /CR, LF and NUL are not allowed/);
      assert.match(refused[1]!, /may not set authorization/);
    } finally {
      diagnostics.unsubscribe(CHANNELS.outboundStart, onStart);
      diagnostics.unsubscribe(CHANNELS.outboundEnd, onEnd);
      diagnostics.unsubscribe(CHANNELS.outboundError, onError);
      await client.close();
      srv.close();
    }
  });
});
