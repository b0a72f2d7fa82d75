/**
 * The authorization server's operations, published on the seam for an audit trail
 * (`gatehouse:auth:event`, publishAuthEvent): token requests and refreshes and their refusals,
 * dynamic client registrations and their refusals (from oidc-provider's events, here), sign-ins at
 * each upstream provider and consents (login-chain.ts, through `AuthEvents`). The plugin writes
 * no record: the audit trail of its application is the subscriber, and with no trail a publish
 * costs one `hasSubscribers` read.
 *
 * Never a token, a code, a client secret or a state: who (the user's subject, the client), what
 * (the grant type, the provider), from where, and how it ended (the OAuth error code).
 */
import type { IncomingMessage } from 'node:http';
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { publishAuthEvent, type AuditOutcome } from '@gatehouse-mcp/gateway';

/** The gateway request the provider's work is part of: the bridge forwards its id and the client's address. */
function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' && value !== '' ? value.slice(0, 128) : null;
}

interface Happened {
  readonly type: 'auth_login' | 'auth_consent' | 'auth_client_registration' | 'auth_token' | 'auth_token_refresh';
  readonly outcome: AuditOutcome;
  readonly subject?: string | null;
  readonly clientId?: string | null;
  readonly errorCode?: string | null;
  readonly details?: Readonly<Record<string, string>>;
}

/** Publishes the authorization server's events of one application (`PluginHost.origin`). */
export class AuthEvents {
  readonly #origin: object;
  readonly #issuer: string;

  constructor(origin: object, issuer: string) {
    this.#origin = origin;
    this.#issuer = issuer;
  }

  /** One event of the request `req` (forwarded by the bridge, so its id and address are the gateway's). */
  publish(req: IncomingMessage, what: Happened): void {
    publishAuthEvent(() => ({
      origin: this.#origin,
      type: what.type,
      outcome: what.outcome,
      time: Date.now(),
      requestId: header(req, 'x-request-id'),
      principal: what.subject === undefined || what.subject === null ? null : { subject: what.subject, issuer: this.#issuer, clientId: what.clientId ?? null },
      clientId: what.clientId ?? null,
      clientAddress: header(req, 'x-forwarded-for') ?? req.socket.remoteAddress ?? null,
      errorCode: what.errorCode ?? null,
      details: what.details ?? {},
    }));
  }

  /** oidc-provider's events of token requests and registrations, published as they happen. */
  watch(provider: Provider): void {
    provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
      const grant = ctx.oidc.entities.Grant as { accountId?: string; clientId?: string } | undefined;
      this.#grant(ctx, 'success', null, grant?.accountId ?? null);
    });
    provider.on('grant.error', (ctx: KoaContextWithOIDC, err: { error?: string; status?: number }) => {
      this.#grant(ctx, (err.status ?? 400) >= 500 ? 'error' : 'denied', err.error ?? 'server_error', null);
    });
    provider.on('registration_create.success', (ctx: KoaContextWithOIDC, client: { clientId: string }) => {
      this.publish(ctx.req, { type: 'auth_client_registration', outcome: 'success', clientId: client.clientId });
    });
    provider.on('registration_create.error', (ctx: KoaContextWithOIDC, err: { error?: string; status?: number }) => {
      this.publish(ctx.req, { type: 'auth_client_registration', outcome: (err.status ?? 400) >= 500 ? 'error' : 'denied', errorCode: err.error ?? 'server_error' });
    });
  }

  #grant(ctx: KoaContextWithOIDC, outcome: AuditOutcome, errorCode: string | null, subject: string | null): void {
    const params = ctx.oidc.params as { grant_type?: unknown } | undefined;
    const grantType = typeof params?.grant_type === 'string' ? params.grant_type.slice(0, 64) : 'unknown';
    const clientId = ctx.oidc.client?.clientId ?? null;
    this.publish(ctx.req, { type: grantType === 'refresh_token' ? 'auth_token_refresh' : 'auth_token', outcome, subject, clientId, errorCode, details: { grantType } });
  }
}
