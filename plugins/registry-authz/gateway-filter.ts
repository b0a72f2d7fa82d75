/**
 * The claims filter (the design's registry-authz filter): per-user tool policy in the gateway,
 * with the registry's claims rule. A backend's claims come from its MCPServer's annotation
 * `toolhive.stacklok.dev/authz-claims` (claims-annotation.ts, the parser the registry reads the
 * same annotation with); finer, each tool, prompt and resource may have claims of its own in the
 * aggregation config (`tools[].authzClaims`, BackendInfo.authzClaims). A caller sees an item, and
 * may use it, when its token's claims satisfy the backend's claims and the item's own (claims.ts:
 * containment, an array claim holds each of its elements, a number or boolean never matches). A
 * resource template has only its backend's claims. Everything else is the gateway's (view.ts):
 * an item hidden here does not exist for that caller, in any list and in any call.
 *
 * `key` is what of the caller the answer depends on, and nothing more: which of the configured
 * claim pairs (claim, value) its token holds, one bit each. Callers holding the same pairs share
 * one answer, whatever else their tokens say (other claims, other values of a configured claim),
 * and the key tells nothing of the token beyond what the configuration asks. It is kept per
 * claims object (the incoming auth's verified token, shared by the requests of one token), so
 * the cost on a request is one WeakMap lookup.
 *
 * Roles (roles.ts) are left out: they grant registry operations (sources, registries,
 * publishing) that a gateway caller has none of, and a superAdmin bypass would be a second way
 * to see everything beside the claims the operator wrote. A caller who must see several teams'
 * tools holds each team's value (an array claim).
 *
 * There is no `admit`: claims decide on the item, never on a call's arguments.
 */
import { createHash } from 'node:crypto';
import { type BackendInfo, type ClaimRequirements, type Context, definePlugin, type ItemClaims, PluginConfigError, type View, type ViewItem } from '@gatehouse-mcp/gateway';
import { claimsSatisfy, hasClaims, type CallerClaims, type ClaimMap } from './claims.ts';
import { ClaimsAnnotationError, CLAIMS_ANNOTATIONS, claimsOfAnnotations } from './claims-annotation.ts';

export interface ClaimsFilterConfig {
  /**
   * `incomingAuth.type: anonymous`: callers present no token, so none holds a claim. Nothing is
   * filtered, and a start-up warning names where claims were configured.
   */
  readonly anonymous: boolean;
  /** The VirtualMCPServer (`VirtualMCPServer/<name>`), for messages. */
  readonly where: string;
}

/** What the filter reads of a backend: BackendInfo and the config's BackendConfig both have it. */
export interface ClaimsSource {
  readonly name: string;
  readonly annotations: Readonly<Record<string, string>>;
  readonly authzClaims: ItemClaims;
}

/** One backend's rules, compiled at start. */
interface BackendRules {
  readonly claims: ClaimMap;
  readonly tools: ReadonlyMap<string, ClaimMap>;
  readonly prompts: ReadonlyMap<string, ClaimMap>;
  readonly resources: ReadonlyMap<string, ClaimMap>;
}

const NO_CALLER_CLAIMS: CallerClaims = Object.freeze({});
const HEX = '0123456789abcdef';

function itemMap(claims: Readonly<Record<string, ClaimRequirements>>): ReadonlyMap<string, ClaimMap> {
  // Own entries only, into a Map: an item named like an Object.prototype member is just a name.
  return new Map(Object.entries(claims).filter(([, map]) => hasClaims(map)));
}

function hasItemClaims(claims: ItemClaims): boolean {
  for (const kind of ['tools', 'prompts', 'resources'] as const) {
    for (const name in claims[kind]) if (Object.hasOwn(claims[kind], name) && hasClaims(claims[kind][name]!)) return true;
  }
  return false;
}

/** Whether the annotation gives claims, or is a mistake the filter must refuse (never taken for "no claims"). */
function hasClaimsAnnotation(annotations: Readonly<Record<string, string>>): boolean {
  try {
    return hasClaims(claimsOfAnnotations(annotations));
  } catch (err) {
    if (err instanceof ClaimsAnnotationError) return true;
    throw err;
  }
}

/**
 * Where claims are configured among `backends` (YAML paths, for the anonymous warning); empty:
 * none, and the filter has nothing to do (the composition root leaves it out).
 */
export function claimsConfiguredAt(backends: readonly ClaimsSource[], where: string): string[] {
  const found: string[] = [];
  for (const backend of backends) {
    if (hasClaimsAnnotation(backend.annotations)) {
      for (const key of CLAIMS_ANNOTATIONS) if (Object.hasOwn(backend.annotations, key)) found.push(`MCPServer/${backend.name} metadata.annotations["${key}"]`);
    }
    if (hasItemClaims(backend.authzClaims)) found.push(`${where} spec.config.aggregation.tools[workload ${backend.name}].authzClaims`);
  }
  return found;
}

/** The rules of every backend; a malformed annotation is refused, naming its MCPServer. */
function compile(backends: readonly BackendInfo[]): Map<string, BackendRules> {
  const rules = new Map<string, BackendRules>();
  const problems: string[] = [];
  for (const backend of backends) {
    let claims: ClaimMap = {};
    try {
      claims = claimsOfAnnotations(backend.annotations);
    } catch (err) {
      if (!(err instanceof ClaimsAnnotationError)) throw err;
      problems.push(`MCPServer/${backend.name} metadata.annotations: ${err.message}`);
    }
    const own = backend.authzClaims;
    rules.set(backend.name, { claims, tools: itemMap(own.tools), prompts: itemMap(own.prompts), resources: itemMap(own.resources) });
  }
  if (problems.length > 0) throw new PluginConfigError(problems);
  return rules;
}

/** Every claim map of the rules, each once. */
function* claimMaps(rules: ReadonlyMap<string, BackendRules>): Generator<ClaimMap> {
  for (const backend of rules.values()) {
    yield backend.claims;
    for (const items of [backend.tools, backend.prompts, backend.resources]) yield* items.values();
  }
}

/**
 * The key's parts: every distinct pair (claim, value) the rules require, sorted, each as a claim
 * map of its own; and a tag of the whole rule set, so that a key of one configuration never
 * stands for another's answer.
 */
function keyParts(rules: ReadonlyMap<string, BackendRules>): { pairs: ClaimMap[]; tag: string } {
  const pairs = new Map<string, ClaimMap>();
  for (const map of claimMaps(rules)) {
    for (const [claim, value] of Object.entries(map)) pairs.set(JSON.stringify([claim, value]), Object.fromEntries([[claim, value]]));
  }
  const sorted = [...pairs.keys()].sort();
  const canonical = JSON.stringify([...rules].map(([name, r]) => [name, r.claims, [...r.tools], [...r.prompts], [...r.resources]]));
  const tag = createHash('sha256').update(canonical).digest('base64url').slice(0, 12);
  return { pairs: sorted.map((pair) => pairs.get(pair)!), tag };
}

/** The caller's claims: the verified principal's, or none. */
function callerClaims(ctx: Context): CallerClaims {
  return ctx.principal?.claims ?? NO_CALLER_CLAIMS;
}

class ClaimsView implements View {
  readonly #rules: ReadonlyMap<string, BackendRules>;
  readonly #pairs: readonly ClaimMap[];
  readonly #tag: string;
  readonly #keys = new WeakMap<CallerClaims, string>();

  constructor(rules: ReadonlyMap<string, BackendRules>) {
    this.#rules = rules;
    const { pairs, tag } = keyParts(rules);
    this.#pairs = pairs;
    this.#tag = tag;
  }

  key(ctx: Context): string | null {
    if (this.#pairs.length === 0) return null;
    const claims = callerClaims(ctx);
    let key = this.#keys.get(claims);
    if (key === undefined) {
      key = this.#keyOf(claims);
      this.#keys.set(claims, key);
    }
    return key;
  }

  /** `<tag>.<hex>`: bit i of the hex is whether the caller holds pair i. */
  #keyOf(claims: CallerClaims): string {
    let hex = '';
    for (let i = 0; i < this.#pairs.length; i += 4) {
      let nibble = 0;
      for (let bit = 0; bit < 4 && i + bit < this.#pairs.length; bit++) {
        if (claimsSatisfy(claims, this.#pairs[i + bit]!)) nibble |= 1 << bit;
      }
      hex += HEX[nibble];
    }
    return `${this.#tag}.${hex}`;
  }

  visible(ctx: Context, items: readonly ViewItem[]): boolean[] {
    const claims = callerClaims(ctx);
    const seen = new Array<boolean>(items.length);
    let backend: string | null = null;
    let rules: BackendRules | undefined;
    let backendSeen = false;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.backend !== backend) {
        backend = item.backend;
        rules = this.#rules.get(backend);
        // A backend this configuration does not know has no rules to pass: hidden.
        backendSeen = rules !== undefined && claimsSatisfy(claims, rules.claims);
      }
      seen[i] = backendSeen && itemSeen(claims, rules!, item);
    }
    return seen;
  }

  knowsBackend(ctx: Context, backend: string): boolean {
    const rules = this.#rules.get(backend);
    return rules !== undefined && claimsSatisfy(callerClaims(ctx), rules.claims);
  }
}

function itemSeen(claims: CallerClaims, rules: BackendRules, item: ViewItem): boolean {
  let own: ClaimMap | undefined;
  switch (item.kind) {
    case 'tools':
      own = rules.tools.get(item.original);
      break;
    case 'prompts':
      own = rules.prompts.get(item.original);
      break;
    case 'resources':
      own = rules.resources.get(item.name);
      break;
    case 'resourceTemplates':
      own = undefined;
      break;
  }
  return own === undefined || claimsSatisfy(claims, own);
}

const ANONYMOUS_WARNING =
  'incomingAuth.type is anonymous: callers present no token and hold no claims, so the claims configured here are not enforced and every caller sees and may use every tool, prompt and resource';

export const claimsFilter = definePlugin<ClaimsFilterConfig>({
  name: 'registry-authz-filter',
  create(config, host) {
    const rules = compile(host.backends);
    if (config.anonymous) {
      const where = claimsConfiguredAt(host.backends, config.where);
      return {
        name: 'registry-authz-filter',
        start() {
          // None (a registry-fed group whose servers have no claims): nothing to warn of.
          if (where.length > 0) host.log.warn({ claimsConfiguredAt: where }, `${ANONYMOUS_WARNING}: ${where.join('; ')}`);
        },
      };
    }
    return { name: 'registry-authz-filter', view: new ClaimsView(rules) };
  },
});

/** Whether any backend has claims (or a claims annotation to refuse): the filter is then part of the chain. */
export function claimsConfigured(backends: readonly ClaimsSource[]): boolean {
  return claimsConfiguredAt(backends, '').length > 0;
}
