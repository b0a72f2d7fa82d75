/**
 * The claims filter's view (plugins/registry-authz/gateway-filter.ts) on the list of
 * 5 backends × 50 tools (250 items): 2 backends with claims in their annotation, 10 tools with
 * claims of their own (one or two pairs), 9 distinct pairs in all; a token of 9 claims with
 * groups and roles as arrays.
 *
 * - visible(), 250 items: what the gateway asks once per list and caller (then keeps per key).
 * - key(), cached: what every request that lists or names an item pays (one WeakMap lookup).
 * - key(), first request of a token: the 9 pairs checked and the key built.
 */
import type { Bench } from 'tinybench';
import { backendInfo, NO_ITEM_CLAIMS } from '../../../core/plugin-api/backend.ts';
import { Principal, type Context } from '../../../core/plugin-api/context.ts';
import { createLogger } from '../../../core/observe/log.ts';
import type { PluginHost } from '../../../core/plugin-api/plugin.ts';
import type { ViewItem } from '../../../core/plugin-api/view.ts';
import { claimsFilter } from '../../../plugins/registry-authz/gateway-filter.ts';

/** Results go to an exported sink so the engine cannot drop the work as dead code. */
export let sink: unknown;

const BACKENDS = 5;
const TOOLS = 50;

function backends() {
  return Array.from({ length: BACKENDS }, (_, b) => {
    const annotation: Record<string, string> = b < 2 ? { 'toolhive.stacklok.dev/authz-claims': JSON.stringify({ org: 'acme', team: b === 0 ? 'platform' : 'data' }) } : {};
    const tools: Record<string, Record<string, string>> = { tool_0: { roles: `role-${b}` }, tool_1: { roles: `role-${b}`, groups: 'engineering' } };
    return backendInfo(`b${b}`, `http://127.0.0.1:${9100 + b}/mcp`, 1000, null, {}, undefined, annotation, { ...NO_ITEM_CLAIMS, tools });
  });
}

const ITEMS: ViewItem[] = Array.from({ length: BACKENDS * TOOLS }, (_, i) => {
  const backend = `b${Math.floor(i / TOOLS)}`;
  const original = `tool_${i % TOOLS}`;
  return { kind: 'tools', backend, name: `${backend}_${original}`, original, item: {} };
});

const CLAIMS = {
  sub: 'alice',
  iss: 'https://idp.example.com',
  aud: 'gatehouse',
  exp: 1_900_000_000,
  iat: 1_899_996_400,
  org: 'acme',
  team: ['platform', 'sre'],
  groups: ['engineering', 'platform'],
  roles: ['role-0', 'role-2', 'viewer'],
};

function ctxOf(claims: Record<string, unknown>): Context {
  return { principal: new Principal('alice', claims, null) } as unknown as Context;
}

export default async function register(bench: Bench): Promise<void> {
  const host: PluginHost = { log: createLogger('silent'), metrics: undefined as never, mcpPath: '/mcp', backends: backends(), configDir: '.', origin: {}, setAuthChallenge: () => {} };
  const view = (await claimsFilter.create({ anonymous: false, where: 'VirtualMCPServer/bench' }, host)).view!;
  const ctx = ctxOf(CLAIMS);
  const shown = view.visible(ctx, ITEMS) as boolean[];
  const count = shown.filter(Boolean).length;
  // b0 (team platform) and b2..b4 (no backend claims), less b3's and b4's two tools for other roles.
  if (count !== 4 * TOOLS - 4) throw new Error(`expected ${4 * TOOLS - 4} tools seen, got ${count}`);
  view.key(ctx);

  bench
    .add('claims filter visible(), 250 tools (5 backends × 50, 9 configured pairs)', () => {
      sink = view.visible(ctx, ITEMS);
    })
    .add('claims filter key(), cached (a later request of the same token)', () => {
      sink = view.key(ctx);
    })
    .add('claims filter key(), first request of a token (9 pairs checked, key built)', () => {
      sink = view.key(ctxOf({ ...CLAIMS }));
    });
}
