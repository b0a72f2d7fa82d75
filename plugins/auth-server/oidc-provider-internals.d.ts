// oidc-provider ships no types for its internal modules; the one Gatehouse reaches into.
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';
  /** The store of the request the provider is handling (its Koa context). */
  const requestContext: AsyncLocalStorage<unknown>;
  export default requestContext;
}

declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  /** The provider's internal state; Gatehouse reads only its grant type handlers. */
  export default function instance(provider: unknown): { grantTypeHandlers: Map<string, (ctx: unknown) => Promise<void>> };
}
