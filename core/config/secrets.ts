/**
 * `Secret` resources and the `{name, key}` references that point into them.
 *
 * A Secret is written as Kubernetes writes it (`type`, `data` with base64 values, `stringData`
 * with plain values, at the top level) or with the same fields under `spec`. When a key is in
 * both, `stringData` wins, as in Kubernetes. Values are text: a `data` value must decode to
 * UTF-8 (write random keys in hex or base64 inside `stringData`).
 */
import { Buffer } from 'node:buffer';
import { z } from 'zod';
import { didYouMean } from './problems.ts';
import { isMapping } from './yaml.ts';

import type { ResolvedSecretRef } from '../plugin-api/backend.ts';

export type { ResolvedSecretRef } from '../plugin-api/backend.ts';

/** Keys of a Secret, as Kubernetes allows them. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The text of a base64 `data` value, or null when it is not base64 of UTF-8 text. */
export function decodeSecretData(encoded: string): string | null {
  const compact = encoded.replace(/\s+/g, '');
  if (!BASE64.test(compact)) return null;
  try {
    return utf8.decode(Buffer.from(compact, 'base64'));
  } catch {
    return null;
  }
}

/** A secret value is never echoed in a message, not even a mistyped one. */
const secretText = z.string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string: quote the value so that YAML reads it as text') });

const dataValue = secretText.superRefine((encoded, ctx) => {
  const compact = encoded.replace(/\s+/g, '');
  if (!BASE64.test(compact)) {
    ctx.addIssue('is not valid base64: `data` values are base64-encoded (put plain text under `stringData` instead)');
  } else if (decodeSecretData(compact) === null) {
    ctx.addIssue('decodes to bytes that are not UTF-8 text: secret values are text (write a random key in hex or base64 under `stringData`)');
  }
});

function secretMap<T extends z.ZodType>(value: T) {
  return z.record(z.string(), value).superRefine((map, ctx) => {
    for (const key of Object.keys(map)) {
      if (!SECRET_KEY.test(key)) {
        ctx.addIssue({ code: 'custom', path: [key], params: { at: 'key' }, message: `key ${JSON.stringify(key)} may only hold letters, digits, "-", "_" and "."` });
      }
    }
  });
}

/** The fields of a Secret besides apiVersion, kind and metadata. */
export const secretBodyShape = {
  type: z.string().min(1).optional(),
  immutable: z.boolean().optional(),
  data: secretMap(dataValue).optional(),
  stringData: secretMap(secretText).optional(),
};

/** The values of a Secret resource, read leniently (problems are reported by the schema). */
function readSecretValues(resource: Record<string, unknown>): Map<string, string | null> {
  const body = isMapping(resource.spec) ? resource.spec : resource;
  const values = new Map<string, string | null>();
  if (isMapping(body.data)) {
    for (const [key, encoded] of Object.entries(body.data)) {
      values.set(key, typeof encoded === 'string' ? decodeSecretData(encoded) : null);
    }
  }
  if (isMapping(body.stringData)) {
    for (const [key, text] of Object.entries(body.stringData)) values.set(key, typeof text === 'string' ? text : null);
  }
  return values;
}

export type SecretLookup =
  | { readonly found: true; readonly value: string }
  /** `problem` is null when the value exists but is itself invalid (already reported at the Secret). */
  | { readonly found: false; readonly problem: string | null };

/** The Secrets of one file, by name. */
export class SecretStore {
  /** A null value is present but invalid. */
  readonly #secrets = new Map<string, Map<string, string | null>>();

  /** Add a Secret resource (a raw document); the first of a name wins. */
  add(name: string, resource: Record<string, unknown>): void {
    if (!this.#secrets.has(name)) this.#secrets.set(name, readSecretValues(resource));
  }

  /** Whether `other` holds the same Secrets with the same values (a reload compares them). */
  sameAs(other: SecretStore): boolean {
    if (other.#secrets.size !== this.#secrets.size) return false;
    for (const [name, values] of this.#secrets) {
      const theirs = other.#secrets.get(name);
      if (theirs === undefined || theirs.size !== values.size) return false;
      for (const [key, value] of values) if (!theirs.has(key) || theirs.get(key) !== value) return false;
    }
    return true;
  }

  resolve(ref: { readonly name: string; readonly key: string }): SecretLookup {
    const secret = this.#secrets.get(ref.name);
    if (secret === undefined) {
      const names = [...this.#secrets.keys()];
      const known = names.length === 0 ? 'no Secret in this file' : `Secrets in this file: ${names.join(', ')}`;
      return { found: false, problem: `Secret ${JSON.stringify(ref.name)} not found${didYouMean(ref.name, names)} (${known})` };
    }
    if (!secret.has(ref.key)) {
      const keys = [...secret.keys()];
      const known = keys.length === 0 ? 'it has no keys' : `its keys: ${keys.join(', ')}`;
      return { found: false, problem: `Secret ${JSON.stringify(ref.name)} has no key ${JSON.stringify(ref.key)}${didYouMean(ref.key, keys)} (${known})` };
    }
    const value = secret.get(ref.key);
    return typeof value === 'string' ? { found: true, value } : { found: false, problem: null };
  }
}

/** A `{name, key}` reference, resolved to the value (a problem at the referencing field when it does not resolve). */
export function secretRefSchema(store: SecretStore) {
  return z.strictObject({ name: z.string().min(1), key: z.string().min(1) }).transform((ref, ctx): ResolvedSecretRef => {
    const lookup = store.resolve(ref);
    if (lookup.found) return { name: ref.name, key: ref.key, value: lookup.value };
    // An invalid value is reported at the Secret; still fail this parse (without a second message).
    ctx.issues.push({ code: 'custom', input: ref, message: lookup.problem ?? '', params: { silent: lookup.problem === null } });
    return z.NEVER;
  });
}
