/**
 * The schema of `MCPGroup.spec.registry` (a Gatehouse extension): the group's backends include
 * the servers a registry serves, read from Gatehouse's registry server. Field names follow the
 * registry's own API source (`url`, `tokenSecretRef`) and ToolHive's sources (`syncPolicy.interval`);
 * the rest are Gatehouse's (`timeout`, `maxResponseSize`, `maxServers`).
 *
 *   registry:
 *     url: https://registry.example.com      # the registry server; read at <url>/v1/registries/<name>/entries
 *     name: default                           # the registry (registries[].name of its config)
 *     tokenSecretRef: {name: registry-reader, key: token}   # a token with the manageRegistries role
 *     syncPolicy: {interval: 30s}             # how often it is read (each wait jittered by ±10 %)
 *     timeout: 30s                            # one whole read, every page
 *     maxResponseSize: 4Mi                    # one page of the answer
 *     maxServers: 500                         # entries read at most
 *     allowPrivateEndpoint: false             # ToolHive's name: its servers may be at private addresses
 *     allowedEndpointCIDRs: [10.1.0.0/16]     # these ranges, whatever their class (loopback too)
 *
 * Only the file is checked: `vmcp validate` never connects to the registry.
 */
import { z } from 'zod';
import { durationSchema as duration } from './duration.ts';
import { parseCidr } from '../http/address-class.ts';
import { httpUrlSchema, parseUrl, q, text } from './formats.ts';
import { headerValueProblem, type SchemaContext } from './schema-parts.ts';
import { sizeSchema } from './size.ts';

export const DEFAULT_REGISTRY_INTERVAL_MS = 30_000;
export const DEFAULT_REGISTRY_TIMEOUT_MS = 30_000;
export const DEFAULT_REGISTRY_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_REGISTRY_MAX_SERVERS = 500;
/** Below this a registry would be read in a loop. */
const MIN_INTERVAL_MS = 100;
/** Past this an entry listing is no longer a registry of servers a person curates. */
const MAX_SERVERS = 10_000;

/** More ranges than an operator writes by hand. */
const MAX_ENDPOINT_CIDRS = 256;

/** One range of `allowedEndpointCIDRs`: an address, or an address and a prefix (its first address). */
const endpointCidr = z.string().superRefine((value, ctx) => {
  const cidr = parseCidr(value);
  if (typeof cidr === 'string') ctx.addIssue(`must be a CIDR range such as 10.1.0.0/16 or fd00:1::/64, or one address: ${cidr}`);
});

/** A registry's name as its config writes it (`registries[].name`), which goes in a URL path. */
const REGISTRY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const registryUrl = httpUrlSchema('https://registry.example.com').superRefine((value, ctx) => {
  const url = parseUrl(value);
  if (url === null) return;
  // Not echoed: the value holds a credential.
  if (url.username !== '' || url.password !== '') ctx.addIssue('must not carry a user name or password: put the token in a Secret and name it in tokenSecretRef');
  else if (url.search !== '' || url.hash !== '') ctx.addIssue(`must not have a query or a fragment: it is the registry server's base URL, such as https://registry.example.com (got ${q(value)})`);
});

export function groupRegistrySchema({ secretRef }: SchemaContext) {
  /** The token travels in an Authorization header: it must be one header field value. */
  const tokenRef = secretRef.superRefine((ref, ctx) => {
    const problem = headerValueProblem(ref.value);
    if (problem !== null) ctx.addIssue(`Secret ${q(ref.name)} key ${q(ref.key)}: ${problem}`);
  });
  return z.strictObject({
    url: registryUrl,
    name: text.superRefine((name, ctx) => {
      if (!REGISTRY_NAME.test(name)) ctx.addIssue(`must be a registry's name: letters, digits, ".", "_" and "-", at most 128 characters (got ${q(name)})`);
    }),
    tokenSecretRef: tokenRef.optional(),
    syncPolicy: z
      .strictObject({
        interval: duration()
          .refine((ms) => ms >= MIN_INTERVAL_MS, `must be at least ${MIN_INTERVAL_MS}ms`)
          .default(DEFAULT_REGISTRY_INTERVAL_MS),
      })
      .prefault({}),
    timeout: duration().default(DEFAULT_REGISTRY_TIMEOUT_MS),
    maxResponseSize: sizeSchema.default(DEFAULT_REGISTRY_MAX_RESPONSE_BYTES),
    maxServers: z.int().min(1).max(MAX_SERVERS).default(DEFAULT_REGISTRY_MAX_SERVERS),
    // Where its servers may be reached (upstream/endpoint-guard.ts): public addresses, and what these allow.
    allowPrivateEndpoint: z.boolean().default(false),
    allowedEndpointCIDRs: z.array(endpointCidr).max(MAX_ENDPOINT_CIDRS).default([]),
  });
}
