/**
 * parseSigningKey: what `validate` and the authorization server read from a signing-key Secret.
 * Every key that can sign a JWT here is accepted with its algorithm; anything else is a message,
 * never an exception (validate must name the YAML path, not crash).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { parseSigningKey } from '../../core/config/signing-key.ts';

const pem = (key: ReturnType<typeof generateKeyPairSync>['privateKey']): string => key.export({ format: 'pem', type: 'pkcs8' }).toString();

test('EC P-256/384/521, RSA and Ed25519 private keys, as PEM or JWK, with their algorithms', () => {
  const cases: [string, string][] = [
    [pem(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey), 'ES256'],
    [pem(generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey), 'ES384'],
    [pem(generateKeyPairSync('ec', { namedCurve: 'P-521' }).privateKey), 'ES512'],
    [pem(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey), 'RS256'],
    [pem(generateKeyPairSync('ed25519').privateKey), 'EdDSA'],
    [JSON.stringify(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })), 'ES256'],
  ];
  for (const [text, alg] of cases) {
    const key = parseSigningKey(text);
    assert.ok(typeof key !== 'string', key as string);
    assert.equal(key.alg, alg);
    assert.equal(typeof key.jwk['d'], 'string', 'the private part is kept');
  }
});

test('anything else is a message naming the problem', () => {
  const cases: [string, RegExp][] = [
    ['hello', /not a private key/],
    ['{"kty":', /neither PEM nor valid JSON/],
    [generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString(), /is a public key/],
    [pem(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey), /at least 2048 bits/],
    [pem(generateKeyPairSync('rsa-pss', { modulusLength: 2048 }).privateKey), /rsa-pss key, which cannot sign/],
    [pem(generateKeyPairSync('dsa', { modulusLength: 2048, divisorLength: 256 }).privateKey), /dsa key, which cannot sign/],
    [pem(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey), /cannot sign/],
    [pem(generateKeyPairSync('x25519').privateKey), /cannot sign/],
  ];
  for (const [text, message] of cases) {
    const key = parseSigningKey(text);
    assert.equal(typeof key, 'string');
    assert.match(key as string, message);
  }
});
