/**
 * Shared pieces of the validator tests: an injected clock, a validator for a test issuer, and
 * refusal assertions (every refusal is a GatewayError; no token ever appears in one).
 */
import assert from 'node:assert/strict';
import { GatewayError } from '../../../core/base/errors.ts';
import { createLogger } from '../../../core/observe/log.ts';
import type { TokenValidator, TokenValidatorOptions } from '../../../plugins/incoming-auth/contract.ts';
import { createTokenValidator } from '../../../plugins/incoming-auth/validator.ts';
import type { KeyIssuer } from './key-issuer.ts';

export const AUDIENCE = 'http://127.0.0.1:4483/mcp';
export const log = createLogger('silent');

export class Clock {
  t = Date.now();
  readonly now = (): number => this.t;
  advance(seconds: number): void {
    this.t += seconds * 1000;
  }
}

export async function validatorFor(issuer: KeyIssuer, clock: Clock, extra: Partial<TokenValidatorOptions> = {}): Promise<TokenValidator> {
  return createTokenValidator({ issuer: issuer.url, audience: AUDIENCE, now: clock.now, ...extra }, log);
}

/** The GatewayError `result` rejects (or throws) with. */
export async function refusal(result: unknown): Promise<GatewayError> {
  try {
    await result;
  } catch (err) {
    assert.ok(err instanceof GatewayError, `expected a GatewayError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the token to be refused');
}

export async function assertInvalidToken(validator: TokenValidator, token: string, description: RegExp): Promise<void> {
  const err = await refusal((async () => validator.verify(token))());
  assert.equal(err.code, 'invalid_token', err.description);
  assert.equal(err.status, 401);
  assert.match(err.description, description);
  assert.ok(!err.description.includes(token) && !(err.detail ?? '').includes(token), 'the token never appears in an error');
}
