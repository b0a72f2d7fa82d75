/**
 * `incomingAuth.type: anonymous`: no authentication, all access control disabled — for
 * development only. It contributes no hook at all, so the request path pays nothing for it; it
 * exists so that the choice is explicit in the chain and loudly logged at start.
 */
import { definePlugin } from '@gatehouse-mcp/gateway';

export const anonymousAuth = definePlugin({
  name: 'anonymous',
  create(_config, host) {
    return {
      name: 'anonymous',
      start() {
        host.log.warn('incomingAuth.type is anonymous: no authentication and no access control (development only)');
      },
    };
  },
});
