/**
 * The static strategies of `MCPExternalAuthConfig`: the gateway's own credential for a backend,
 * the same for every caller, from a Secret.
 *
 *   headerInjection{headerName, valueSecretRef}  `<headerName>: <value>` (an API key header)
 *   bearerToken{tokenSecretRef}                  `Authorization: Bearer <token>`
 *   unauthenticated                              nothing: the explicit "no credentials"
 *
 * validate checked the values (one header value each: no CR, LF, NUL or surrounding space) and
 * refused header names the gateway writes itself. The header is built once, at start; the hook
 * only sets it.
 */
import { type BackendInfo, type Context, definePlugin, type OutgoingHeaders } from '@gatehouse-mcp/gateway';

export const staticCredentials = definePlugin<undefined>({
  name: 'static-credentials',
  create() {
    return {
      name: 'static-credentials',
      prepareBackend(backend: BackendInfo) {
        const auth = backend.auth;
        let name: string;
        let value: string;
        if (auth?.type === 'headerInjection') {
          name = auth.headerName;
          value = auth.value.value;
        } else if (auth?.type === 'bearerToken') {
          name = 'authorization';
          value = `Bearer ${auth.token.value}`;
        } else {
          return null;
        }
        return (_ctx: Context, headers: OutgoingHeaders) => {
          headers.set(name, value);
          return undefined;
        };
      },
    };
  },
});
