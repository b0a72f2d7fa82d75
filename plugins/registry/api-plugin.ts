/**
 * The registry plugin: the registry server's HTTP API on its store. The routes are the
 * consumer and publish API of each registry (`/{registry}/v0.1/...`), the admin API of sources
 * and registries (`/v1/sources`, `/v1/registries`), the identity endpoint (`/v1/me`) and the API's
 * OpenAPI document (`/openapi.json`). Those that change something publish each change for an
 * audit trail (api/audited-routes.ts).
 */
import { definePlugin } from '@gatehouse-mcp/gateway';
import { consumerRoutes } from './api/consumer-routes.ts';
import { identityRoute } from './api/identity-route.ts';
import { openapiRoutes } from './api/openapi-route.ts';
import { publishRoutes } from './api/publish-routes.ts';
import { registryRoutes } from './api/registry-routes.ts';
import { sourceRoutes } from './api/source-routes.ts';
import type { ApiDeps } from './api/steps.ts';
import { auditedRoutes } from './api/audited-routes.ts';

export const registryApi = definePlugin<ApiDeps>({
  name: 'registry',
  create(deps, host) {
    const routes = [identityRoute(), ...sourceRoutes(deps), ...registryRoutes(deps), ...consumerRoutes(deps), ...publishRoutes(deps), ...openapiRoutes()];
    return { name: 'registry', routes: auditedRoutes(routes, host.origin) };
  },
});
