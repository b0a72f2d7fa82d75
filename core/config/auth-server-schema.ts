/**
 * The schema of a VirtualMCPServer's `authServerConfig`, the embedded OAuth 2.1 authorization
 * server: its issuer and keys, token lifespans (within the bounds the server allows), the chain of
 * upstream identity providers, its storage, and the bounds a flood meets (rate budgets per group
 * of endpoints, registered clients, sign-ins in progress). Also the rule tying it to incomingAuth.
 */
import { Buffer } from 'node:buffer';
import { z } from 'zod';
import type { RateBound } from '../base/rate-limit.ts';
import {
  AUTH_SERVER_ENDPOINT_GROUPS,
  DEFAULT_AUTH_SERVER_RATE_LIMITS,
  DEFAULT_MAX_CLIENTS,
  DEFAULT_MAX_PENDING_LOGINS,
  DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS,
  type AuthServerEndpointGroup,
} from './auth-server-limits.ts';
import { durationSchema as duration } from './duration.ts';
import { addIssue, issuerUrl, q, text, uniqueNames, whenMapping, type Ctx } from './formats.ts';
import { blockOfType, dnsLabel, httpUrl, redisStorageSchema, stringMap, textList, type SchemaContext } from './schema-parts.ts';
import { parseSigningKey } from './signing-key.ts';
import { isMapping } from './yaml.ts';

/** A token lifespan with its default and the bounds the authorization server allows. */
const lifespan = (fallback: number, [min, minText]: [number, string], [max, maxText]: [number, string]) =>
  duration()
    .default(fallback)
    .superRefine((ms, ctx) => {
      if (ms < min || ms > max) ctx.addIssue(`must be between ${minText} and ${maxText}`);
    });

/** A budget: at most maxTokens requests per refillPeriod (ToolHive's rateLimiting names). */
const rateBound = (fallback: RateBound) =>
  z
    .strictObject({
      maxTokens: z.int().min(1).max(1_000_000_000).default(fallback.maxTokens),
      refillPeriod: duration()
        .default(fallback.refillPeriodMs)
        .superRefine((ms, ctx) => {
          if (ms < 1_000 || ms > 24 * 3_600_000) ctx.addIssue('must be between 1s and 24h');
        }),
    })
    .prefault({});
const endpointBudget = (group: AuthServerEndpointGroup) =>
  z
    .strictObject({ perAddress: rateBound(DEFAULT_AUTH_SERVER_RATE_LIMITS[group].perKey), shared: rateBound(DEFAULT_AUTH_SERVER_RATE_LIMITS[group].shared) })
    .superRefine((budget, ctx) => {
      if (budget.shared.maxTokens < budget.perAddress.maxTokens && budget.shared.refillPeriod === budget.perAddress.refillPeriod) {
        addIssue(ctx, ['shared', 'maxTokens'], `is below perAddress.maxTokens (${budget.perAddress.maxTokens}): one address could spend the budget every address shares`);
      }
    })
    .prefault({});
/** `authServerConfig.rateLimiting`: a budget per group of endpoints (core/config/auth-server-limits.ts). */
const rateLimiting = z
  .strictObject(Object.fromEntries(AUTH_SERVER_ENDPOINT_GROUPS.map((group) => [group, endpointBudget(group)])) as Record<AuthServerEndpointGroup, ReturnType<typeof endpointBudget>>)
  .prefault({});

export function authServerConfigSchema(schema: SchemaContext) {
  const { secretRef } = schema;
  const redisStorage = redisStorageSchema(secretRef);
  const upstreamProvider = upstreamProviderSchema(schema);
  const hmacSecretRef = secretRef.superRefine((ref, ctx) => {
    const bytes = Buffer.byteLength(ref.value);
    if (bytes < 32) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)} holds ${bytes} bytes: an HMAC secret needs at least 32`);
  });
  const signingKeyRef = secretRef.superRefine((ref, ctx) => {
    const key = parseSigningKey(ref.value);
    if (typeof key === 'string') ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)}: ${key}`);
  });
  return z.strictObject({
    issuer: issuerUrl,
    displayName: text
      .superRefine((name, ctx) => {
        if (name.length > 100) ctx.addIssue(`is ${name.length} characters long; at most 100`);
        if (/[\p{Cc}\p{Cf}]/u.test(name)) ctx.addIssue('contains a control or invisible formatting character');
      })
      .optional(),
    authorizationEndpointBaseUrl: httpUrl.optional(),
    signingKeySecretRefs: z.array(signingKeyRef).default([]),
    hmacSecretRefs: z.array(hmacSecretRef).default([]),
    tokenLifespans: z
      .strictObject({
        accessTokenLifespan: lifespan(3_600_000, [60_000, '1m'], [24 * 3_600_000, '24h']),
        refreshTokenLifespan: lifespan(168 * 3_600_000, [3_600_000, '1h'], [30 * 24 * 3_600_000, '720h (30 days)']),
        authCodeLifespan: lifespan(600_000, [30_000, '30s'], [600_000, '10m']),
      })
      .superRefine((lifespans, ctx) => {
        if (lifespans.refreshTokenLifespan < lifespans.accessTokenLifespan) {
          addIssue(ctx, ['refreshTokenLifespan'], 'must not be shorter than accessTokenLifespan: a refresh token must outlive the access tokens it renews');
        }
      })
      .prefault({}),
    upstreamProviders: uniqueNames('provider', z.array(upstreamProvider).min(1)),
    storage: z
      .strictObject({ type: z.enum(['memory', 'redis']), redis: redisStorage.optional() })
      .superRefine(blockOfType({ redis: 'redis', memory: null }), whenMapping)
      .optional(),
    rateLimiting,
    maxClients: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_CLIENTS),
    maxPendingLogins: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_PENDING_LOGINS),
    maxPendingLoginsPerAddress: z.int().min(1).max(10_000_000).default(DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS),
  }).superRefine((config, ctx) => {
    // Run with other fields invalid too (whenMapping): these two are read as given.
    const { maxPendingLogins: total, maxPendingLoginsPerAddress: perAddress } = config as { maxPendingLogins: unknown; maxPendingLoginsPerAddress: unknown };
    if (typeof total === 'number' && typeof perAddress === 'number' && perAddress > total) {
      addIssue(ctx, ['maxPendingLoginsPerAddress'], `is above maxPendingLogins (${total})`);
    }
  }, whenMapping);
}

/** An upstream identity provider of the login chain: oauth2 or oidc, `type` selecting its block. */
function upstreamProviderSchema({ secretRef }: SchemaContext) {
  return z
    .strictObject({
      name: dnsLabel,
      type: z.enum(['oauth2', 'oidc']),
      oauth2Config: z
        .strictObject({
          authorizationEndpoint: httpUrl,
          tokenEndpoint: httpUrl,
          clientId: text,
          clientSecretRef: secretRef.optional(),
          scopes: textList,
          userInfo: z
            .strictObject({
              endpointUrl: httpUrl,
              httpMethod: z.enum(['GET', 'POST']).default('GET'),
              additionalHeaders: stringMap.default({}),
              fieldMapping: z.strictObject({ subjectFields: textList, nameFields: textList, emailFields: textList }).prefault({}),
            })
            .optional(),
          tokenResponseMapping: z
            .strictObject({ accessTokenPath: text.optional(), scopePath: text.optional(), refreshTokenPath: text.optional(), expiresInPath: text.optional() })
            .optional(),
        })
        .optional(),
      oidcConfig: z.strictObject({ issuerUrl, clientId: text, clientSecretRef: secretRef.optional(), scopes: textList }).optional(),
    })
    .superRefine(blockOfType({ oauth2: 'oauth2Config', oidc: 'oidcConfig' }), whenMapping);
}

/**
 * With the embedded authorization server, incomingAuth validates the JWTs it issues: oidc,
 * inline, and the same issuer (core/README.md, Decisions).
 */
export function authServerMatchesIncomingAuth(spec: unknown, ctx: Ctx): void {
  if (!isMapping(spec) || !isMapping(spec.authServerConfig)) return;
  const issuer = spec.authServerConfig.issuer;
  const incoming = isMapping(spec.incomingAuth) ? spec.incomingAuth : {};
  const oidcConfig = isMapping(incoming.oidcConfig) ? incoming.oidcConfig : {};
  const inline = isMapping(oidcConfig.inline) ? oidcConfig.inline : null;
  if (incoming.type === 'anonymous' || oidcConfig.type === 'cluster') {
    addIssue(
      ctx,
      ['authServerConfig'],
      'needs incomingAuth type oidc with oidcConfig type inline and the same issuer: incomingAuth validates the tokens that the embedded authorization server issues',
      'key',
    );
  } else if (inline !== null && typeof issuer === 'string' && typeof inline.issuer === 'string' && issuer !== inline.issuer) {
    addIssue(
      ctx,
      ['authServerConfig', 'issuer'],
      `must equal spec.incomingAuth.oidcConfig.inline.issuer (${q(inline.issuer)}), since incomingAuth validates the tokens this authorization server issues (got ${q(issuer)})`,
    );
  }
}
