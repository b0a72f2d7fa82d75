/**
 * The schemas of authentication on both sides of the gateway: a VirtualMCPServer's
 * `incomingAuth` (anonymous, OIDC inline, cluster service-account tokens) and `outgoingAuth`
 * (which MCPExternalAuthConfig each backend uses), and the MCPExternalAuthConfig resource itself
 * (upstreamInject, tokenExchange, headerInjection, bearerToken, unauthenticated).
 */
import { z } from 'zod';
import { durationSchema as duration } from './duration.ts';
import { authzConfigSchema } from './authz-schema.ts';
import { addIssue, issuerUrl, q, text, whenMapping } from './formats.ts';
import { blockOfType, credentialHeader, groupBackendProblem, headerValueProblem, httpUrl, reference, textList, type SchemaContext } from './schema-parts.ts';
import { isMapping } from './yaml.ts';

/** The outgoing-auth strategies of an MCPExternalAuthConfig. */
export const EXTERNAL_AUTH_TYPES = ['upstreamInject', 'tokenExchange', 'headerInjection', 'bearerToken', 'unauthenticated'] as const;
/** RFC 8693 subject token types, short or as the URN. */
const SUBJECT_TOKEN_TYPES = [
  'access_token',
  'id_token',
  'jwt',
  'urn:ietf:params:oauth:token-type:access_token',
  'urn:ietf:params:oauth:token-type:id_token',
  'urn:ietf:params:oauth:token-type:jwt',
] as const;

/** `spec.incomingAuth`, `spec.outgoingAuth`, and the MCPExternalAuthConfig spec. */
export function authSchemas(schema: SchemaContext) {
  const externalAuthConfigRef = z.strictObject({ name: reference('MCPExternalAuthConfig', schema.index.externalAuthConfigs) });
  return {
    externalAuthConfigRef,
    externalAuthSpec: externalAuthSpecSchema(schema),
    incomingAuth: incomingAuthSchema(schema),
    outgoingAuth: outgoingAuthSchema(schema, externalAuthConfigRef),
  };
}

/** The MCPExternalAuthConfig spec: `type` selects the one block of its strategy. */
function externalAuthSpecSchema({ index, secretRef, providerName }: SchemaContext) {
  /** A header value from a Secret: what the backend receives as is, so it must be one field value. */
  const headerValueRef = secretRef.superRefine((ref, ctx) => {
    const problem = headerValueProblem(ref.value);
    if (problem !== null) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)}: ${problem}`);
  });

  return z
    .strictObject({
      type: z.enum(EXTERNAL_AUTH_TYPES),
      upstreamInject: z.strictObject({ providerName }).optional(),
      tokenExchange: z
        .strictObject({
          tokenUrl: issuerUrl,
          clientId: text,
          clientSecretRef: secretRef.optional(),
          audience: text,
          scopes: textList,
          subjectProviderName: providerName.optional(),
          subjectTokenType: z.enum(SUBJECT_TOKEN_TYPES).default('access_token'),
          externalTokenHeaderName: credentialHeader.optional(),
          // Gatehouse extension: how long an exchange may take before the request fails with 504.
          timeout: duration().default(10_000),
        })
        .superRefine((exchange, ctx) => {
          if (exchange.subjectProviderName === undefined && index.providers === null && index.anonymousIncoming) {
            addIssue(
              ctx,
              [],
              'has no subject token: it exchanges the caller\'s token, but the VirtualMCPServer\'s incomingAuth is anonymous (use incomingAuth oidc, or subjectProviderName with the embedded authorization server)',
            );
          }
        }, whenMapping)
        .optional(),
      headerInjection: z.strictObject({ headerName: credentialHeader, valueSecretRef: headerValueRef }).optional(),
      bearerToken: z
        .strictObject({
          tokenSecretRef: headerValueRef.superRefine((ref, ctx) => {
            if (/^bearer\s/i.test(ref.value)) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)} starts with "Bearer ": store the token alone (the gateway adds the scheme)`);
          }),
        })
        .optional(),
    })
    .superRefine(
      blockOfType({ upstreamInject: 'upstreamInject', tokenExchange: 'tokenExchange', headerInjection: 'headerInjection', bearerToken: 'bearerToken', unauthenticated: null }),
      whenMapping,
    );
}

/** `spec.incomingAuth`: anonymous, or OIDC (inline, or the cluster's service-account tokens); Cedar policies (`authzConfig`) with either. */
function incomingAuthSchema(schema: SchemaContext) {
  const { secretRef } = schema;
  return z
    .strictObject({
      type: z.enum(['anonymous', 'oidc']),
      resourceUrl: httpUrl.optional(),
      // Scopes advertised in RFC 9728 `scopes_supported` and the challenge's `scope=`.
      scopes: z.array(text).optional(),
      oidcConfig: z
        .strictObject({
          type: z.enum(['inline', 'cluster']),
          inline: z
            .strictObject({
              issuer: issuerUrl,
              clientId: text,
              audience: text,
              clientSecretRef: secretRef.optional(),
              jwksAllowPrivateIP: z.boolean().default(false),
            })
            .optional(),
          // Defaults (CLUSTER_ISSUER, CLUSTER_AUDIENCE) are applied by the mapping, once, also when the block is absent.
          cluster: z.strictObject({ issuer: issuerUrl.optional(), audience: text.optional() }).optional(),
        })
        .superRefine(blockOfType({ inline: 'inline', cluster: 'cluster' }, ['cluster']), whenMapping)
        .optional(),
      // ToolHive's authorization of tools, prompts and resources (authz-schema.ts).
      authzConfig: authzConfigSchema(schema).optional(),
    })
    .superRefine(blockOfType({ oidc: 'oidcConfig', anonymous: null }), whenMapping)
    .superRefine((auth, ctx) => {
      if (auth.type === 'oidc' && auth.resourceUrl === undefined) {
        addIssue(ctx, ['resourceUrl'], 'is required when type is oidc: clients discover the authorization server from it (RFC 9728)');
      }
    }, whenMapping);
}

/** `spec.outgoingAuth`: which MCPExternalAuthConfig each backend uses, and the cache of exchanged tokens. */
function outgoingAuthSchema({ index }: SchemaContext, externalAuthConfigRef: z.ZodType<{ name: string }>) {
  /** Which MCPExternalAuthConfig a backend uses; `type` in the spelling of either manifest generation. */
  const backendAuth = z.strictObject({
    type: z.enum(['external_auth_config_ref', 'externalAuthConfigRef']).default('external_auth_config_ref'),
    externalAuthConfigRef,
  });

  return z
    .strictObject({
      source: z.enum(['discovered', 'inline']).default('discovered'),
      backends: z.record(z.string(), backendAuth).optional(),
      // For every backend that gets no strategy from its source.
      default: backendAuth.optional(),
      // Gatehouse extension: the cache of exchanged tokens (tokenExchange).
      tokenExchangeCache: z
        .strictObject({
          maxEntries: z.int().min(1).default(10_000),
          // Kept this long when the STS gives neither expires_in nor a JWT exp.
          defaultLifetime: duration().default(60_000),
          // Dropped this long before the exchanged token expires.
          expirySkew: duration().default(30_000),
        })
        .prefault({}),
    })
    .superRefine((auth, ctx) => {
      if (!isMapping(auth.backends)) return;
      if (auth.source === 'discovered') {
        addIssue(ctx, ['backends'], 'is only used when source is inline (with source discovered, each MCPServer\'s own spec.externalAuthConfigRef applies)', 'key');
      }
      for (const name of Object.keys(auth.backends)) {
        const problem = groupBackendProblem(index, name);
        if (problem !== null) addIssue(ctx, ['backends', name], problem, 'key');
      }
    }, whenMapping);
}
