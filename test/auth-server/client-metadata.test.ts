/**
 * Client ID Metadata Documents (MCP 2025-11-25): a client whose `client_id` is an https URL is
 * described by the JSON document at that URL. The documents here are served by a fetch the test
 * gives the server (its tests run on loopback only, and the real fetch refuses loopback), except
 * where the real, guarded fetch is the point: a private address is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAuthGateway, type AuthGateway } from './helpers/setup.ts';

const REDIRECT = 'http://127.0.0.1:7781/callback';
const CHALLENGE = 'ZtNPunH49FD35FWYhT5Tv8I7vRKQJ8uxMaL0_9eHjNA';
const APP = 'https://app.example.com/oauth/client.json';

/** The documents by URL; a fetch of anything else fails as a network error would. */
const documents = new Map<string, unknown>([
  [APP, { client_id: APP, client_name: 'Example app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }],
  ['https://app.example.com/mismatch.json', { client_id: 'https://elsewhere.example.com/client.json', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }],
  ['https://app.example.com/secret.json', { client_id: 'https://app.example.com/secret.json', redirect_uris: [REDIRECT], client_secret: 'shh', token_endpoint_auth_method: 'client_secret_basic' }],
  ['https://app.example.com/second.json', { client_id: 'https://app.example.com/second.json', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }],
  ['https://app.example.com/big.json', { client_id: 'https://app.example.com/big.json', redirect_uris: [REDIRECT], client_name: 'x'.repeat(8 * 1024) }],
]);
let fetched: string[] = [];

async function serveDocument(url: string, init: { signal?: AbortSignal }): Promise<Response> {
  fetched.push(url);
  if (url.startsWith('https://slow-')) {
    // Never answers: only the server's own time bound ends it.
    return new Promise((_resolve, reject) => init.signal?.addEventListener('abort', () => reject(new Error('aborted'))));
  }
  const doc = documents.get(url);
  if (doc === undefined) throw new TypeError('fetch failed');
  return new Response(JSON.stringify(doc), { status: 200, headers: { 'content-type': 'application/json', 'cache-control': 'max-age=60' } });
}

describe('embedded authorization server: Client ID Metadata Documents', () => {
  let setup: AuthGateway;
  let guarded: AuthGateway;
  before(async () => {
    setup = await startAuthGateway({ fetchClientMetadata: serveDocument });
    guarded = await startAuthGateway();
  });
  after(async () => {
    await setup.close();
    await guarded.close();
  });

  function authorize(gateway: AuthGateway, clientId: string): Promise<Response> {
    const query = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT, code_challenge: CHALLENGE, code_challenge_method: 'S256', state: 'c' });
    return fetch(`${gateway.issuer}/oauth/authorize?${query}`, { redirect: 'manual' });
  }

  it('says so in its metadata', async () => {
    const doc = (await (await fetch(`${setup.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(doc.client_id_metadata_document_supported, true);
  });

  it('a client named by its document\'s URL starts a login without registering, and the document is fetched once', async () => {
    fetched = [];
    for (let i = 0; i < 2; i++) {
      const res = await authorize(setup, APP);
      assert.equal(res.status, 303, await res.text());
      assert.match(res.headers.get('location') ?? '', /^\/oauth\/interaction\//);
    }
    assert.deepEqual(fetched, [APP], 'cached after the first fetch');
  });

  for (const [what, url] of [
    ['whose client_id is another URL', 'https://app.example.com/mismatch.json'],
    ['that holds a client secret', 'https://app.example.com/secret.json'],
    ['past the size bound (5 KiB)', 'https://app.example.com/big.json'],
    ['that cannot be fetched', 'https://app.example.com/missing.json'],
  ] as const) {
    it(`a document ${what} is refused, with no redirect`, async () => {
      const res = await authorize(setup, url);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('location'), null);
    });
  }

  it('a document that could not be reached is not asked for again for a while; its host\'s others still are', async () => {
    fetched = [];
    for (let i = 0; i < 3; i++) assert.equal((await authorize(setup, 'https://app.example.com/down.json')).status, 400);
    assert.deepEqual(fetched, ['https://app.example.com/down.json']);
    // A request for a missing document on a real client's host locks nobody out.
    assert.equal((await authorize(setup, 'https://app.example.com/second.json')).status, 303);
  });

  it('slow documents cannot tie the server up: a bounded number are fetched at once, each time-bound', { timeout: 20_000 }, async () => {
    fetched = [];
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => authorize(setup, `https://slow-${i}.example.com/client.json`)));
    for (const answer of answers) assert.equal(answer.status, 400);
    assert.ok(fetched.length <= 16, `${fetched.length} fetches at once`);
    assert.ok(performance.now() - started < 8_000, 'each fetch ended by the time bound');
    // Meanwhile, and after, the server answers others.
    const doc = (await (await fetch(`${setup.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(doc.issuer, setup.issuer);
  });

  it('the real fetch refuses a document on a private or loopback address', async () => {
    for (const url of ['https://127.0.0.1:1/client.json', 'https://10.0.0.1/client.json', 'https://[::1]/client.json']) {
      const res = await authorize(guarded, url);
      assert.equal(res.status, 400, url);
      assert.equal(res.headers.get('location'), null);
    }
  });
});
