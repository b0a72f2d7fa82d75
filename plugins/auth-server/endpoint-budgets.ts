/**
 * How fast the authorization server's endpoints may be used (`authServerConfig.rateLimiting`):
 * each group of endpoints has a budget per client address and one shared by every address
 * (core/base/rate-limit.ts; in Redis when the server's storage is, so replicas share them). Past
 * either, a 429 with Retry-After and an OAuth error body that names the budget and its YAML path.
 *
 * The client address is the gateway's (core/http/client-address.ts): behind a proxy listed in
 * `server.trustedProxies` the address its X-Forwarded-For names, else the socket's; an IPv6
 * client counts by its /64 (what one subscriber holds). Behind any other proxy every client
 * shares the proxy's address, and the per-address budgets are per gateway.
 */
import {
  AUTH_SERVER_ENDPOINT_NAMES,
  type AuthServerConfig,
  type AuthServerEndpointGroup,
  type BudgetRefusal,
  type BudgetStore,
  type Context,
  limitKey,
  Reply,
  RequestBudget,
  type RouteDef,
} from '@gatehouse-mcp/gateway';

type Handler = RouteDef['handler'];

/** "60 s", "5 min", "1 h": a window as the refusal says it. */
function windowText(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.ceil(ms / 1000)} s`;
}

/** The refusal of a request past a budget of `group`. `cors`: the endpoint answers other origins (the body must be readable there). */
export function budgetRefusal(group: AuthServerEndpointGroup, refusal: BudgetRefusal, cors: boolean): Reply {
  const what = AUTH_SERVER_ENDPOINT_NAMES[group];
  const field = `authServerConfig.rateLimiting.${group}.${refusal.scope === 'perKey' ? 'perAddress' : 'shared'}`;
  const limit = `at most ${refusal.bound.maxTokens} per ${windowText(refusal.bound.refillPeriodMs)}`;
  const description =
    refusal.scope === 'perKey'
      ? `too many ${what} from this address: ${limit} (${field}); retry after ${refusal.retryAfterSeconds} s`
      : `too many ${what} to this server from all addresses together: ${limit} (${field}); retry after ${refusal.retryAfterSeconds} s`;
  return Reply.json(
    429,
    { error: 'temporarily_unavailable', error_description: description },
    {
      'retry-after': String(refusal.retryAfterSeconds),
      'cache-control': 'no-store',
      ...(cors ? { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'retry-after' } : {}),
    },
  );
}

export class EndpointBudgets {
  readonly #budgets: ReadonlyMap<AuthServerEndpointGroup, RequestBudget>;

  constructor(limits: AuthServerConfig['rateLimiting'], store: BudgetStore) {
    this.#budgets = new Map(Object.entries(limits).map(([group, bounds]) => [group as AuthServerEndpointGroup, new RequestBudget(`auth-server:${group}`, bounds, store)]));
  }

  /**
   * `handler` behind the budgets of `group`: a request past either is answered 429 and goes no
   * further, unless the shared budget refused it and `underWay` says it is a step of a sign-in in progress.
   */
  guard(group: AuthServerEndpointGroup, handler: Handler, cors = false, underWay: ((ctx: Context) => Promise<boolean>) | null = null): Handler {
    const budget = this.#budgets.get(group)!;
    return async (ctx: Context) => {
      const refusal = await budget.take(limitKey(ctx.clientAddress));
      if (refusal === null || (refusal.scope === 'shared' && underWay !== null && (await underWay(ctx)))) return handler(ctx);
      return budgetRefusal(group, refusal, cors);
    };
  }
}
