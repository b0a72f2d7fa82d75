/**
 * bearerTokenOf / bearerTokenFrom: where a token may come from (RFC 6750 §2.1 only, as the MCP
 * authorization spec requires), and the 401 `invalid_request` for everything else.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { GatewayError } from '../../core/base/errors.ts';
import { bearerTokenFrom, bearerTokenOf } from '../../plugins/incoming-auth/bearer.ts';

function request(rawHeaders: string[]): IncomingMessage {
  return { rawHeaders } as unknown as IncomingMessage;
}

function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError, `expected a GatewayError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a refusal');
}

function assertInvalidRequest(fn: () => unknown, description: RegExp): void {
  const err = refusal(fn);
  assert.equal(err.code, 'invalid_request');
  assert.equal(err.status, 401);
  assert.match(err.description, description);
}

describe('bearerTokenOf', () => {
  it('returns the token of one Authorization: Bearer header', () => {
    assert.equal(bearerTokenOf(request(['Host', 'x', 'Authorization', 'Bearer abc.def.ghi']), ''), 'abc.def.ghi');
  });

  it('accepts the scheme in any case and extra spaces around the token', () => {
    assert.equal(bearerTokenOf(request(['authorization', 'bearer tok']), ''), 'tok');
    assert.equal(bearerTokenOf(request(['AUTHORIZATION', 'BEARER   tok  ']), ''), 'tok');
    assert.equal(bearerTokenOf(request(['authorization', 'BeArEr tok']), 'a=1&b=2'), 'tok');
  });

  it('refuses a request without a token', () => {
    assertInvalidRequest(() => bearerTokenOf(request(['Host', 'x']), ''), /requires a bearer token/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', '']), ''), /requires a bearer token/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Bearer ']), ''), /no token/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Bearer    ']), ''), /no token/);
  });

  it('refuses another scheme', () => {
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Basic dXNlcjpwYXNz']), ''), /Bearer scheme/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Bearertok']), ''), /Bearer scheme/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'DPoP tok']), ''), /Bearer scheme/);
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'tok']), ''), /Bearer scheme/);
  });

  it('refuses two Authorization headers, even when Node would keep only the first', () => {
    assertInvalidRequest(
      () => bearerTokenOf(request(['Authorization', 'Bearer a', 'Accept', '*/*', 'authorization', 'Bearer b']), ''),
      /more than one Authorization header/,
    );
    assertInvalidRequest(() => bearerTokenFrom('Bearer a', 2, ''), /more than one/);
  });

  it('refuses a token in the query string, with or without a header', () => {
    for (const query of ['access_token=abc', 'x=1&access_token=abc', 'access%5Ftoken=abc', 'access_token']) {
      assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Bearer good']), query), /query string/);
      assertInvalidRequest(() => bearerTokenOf(request([]), query), /query string/);
    }
    // Names that merely contain the word are fine.
    assert.equal(bearerTokenOf(request(['Authorization', 'Bearer t']), 'my_access_token_hint=1&accessible=yes'), 't');
  });

  it('refuses a token with inner spaces (not a b64token)', () => {
    assertInvalidRequest(() => bearerTokenOf(request(['Authorization', 'Bearer a b']), ''), /single b64token/);
  });
});
