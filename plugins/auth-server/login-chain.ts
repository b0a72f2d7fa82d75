/**
 * The login: the provider's interaction, run as a chain through every upstream provider in
 * order (seed rule 2). For one authorization request:
 *
 *   /oauth/interaction/:uid  → the first provider, with fresh state, nonce and PKCE
 *   /oauth/callback          → its code exchanged, its tokens kept for this login; the next
 *                              provider likewise; after the last, the user is logged in and the
 *                              grant made, and the provider sends its code to the client
 *
 * Each leg is a single-use record keyed by its state, bound to the interaction (the browser's
 * own interaction cookie must match) and to the provider it was sent to: its code is exchanged
 * with that provider only, and an `iss` in the callback must be that provider's (mix-up
 * defence). The first provider names the user (`sub`, and name and email when it gives them).
 * Any failure deletes what the attempt stored and sends the client an OAuth error.
 *
 * The grant's id is the token set id (`tsid`) of the JWTs the provider issues for it: the key
 * of the upstream tokens this login stored, for the plugins that present them to backends.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Buffer } from 'node:buffer';
import * as client from 'openid-client';
import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import { limitKey } from '@gatehouse-mcp/gateway';
import type { LoginStore, PendingLeg } from './login-store.ts';
import { PendingLoginLimit, stateHash } from './pending-legs.ts';
import { consentPage } from './consent-page.ts';
import { displayText } from './html.ts';
import { CALLBACK_PATH, INTERACTION_PATH } from './routes.ts';
import type { UpstreamIdentity, UpstreamProvider } from './upstream-providers.ts';
import type { AuthEvents } from './audit-events.ts';

export interface LoginChainOptions {
  readonly provider: Provider;
  readonly upstreams: readonly UpstreamProvider[];
  readonly store: LoginStore;
  /** The issuer's URL: the callback is `${issuer}/oauth/callback`. */
  readonly issuer: string;
  /** The resource the grant covers (the gateway's MCP endpoint), and its scopes. */
  readonly resource: string;
  /** What the consent page calls the MCP server (`authServerConfig.displayName`); null: its resource URL. */
  readonly displayName: string | null;
  readonly scopes: readonly string[];
  readonly log: Logger;
  /** Where sign-ins and consents are published for an audit trail. */
  readonly events: AuthEvents;
}

/** Why a login failed, as the client's OAuth error says it. */
class LoginFailure extends Error {
  readonly error: string;
  constructor(error: string, description: string) {
    super(description);
    this.error = error;
  }
}

const random = (): string => randomBytes(32).toString('base64url');

/** The client's address as the gateway derived it (the bridge sends it as the only X-Forwarded-For). */
function clientAddress(req: IncomingMessage): string {
  const forwarded = req.headers['x-forwarded-for'];
  return typeof forwarded === 'string' && forwarded !== '' ? forwarded : (req.socket.remoteAddress ?? 'unknown');
}

export class LoginChain {
  readonly #o: LoginChainOptions;
  readonly #callback: string;
  readonly #issuerPath: string;

  constructor(options: LoginChainOptions) {
    this.#o = options;
    this.#callback = options.issuer.replace(/\/$/, '') + CALLBACK_PATH;
    this.#issuerPath = new URL(options.issuer).pathname.replace(/\/$/, '');
  }

  /** The provider's interaction for an authorization request: the login starts at the first provider. */
  async interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await this.#o.provider.interactionDetails(req, res);
    const attempt = random();
    try {
      await this.#startLeg(req, res, details.uid, 0, null, attempt);
    } catch (err) {
      // Too many sign-ins in progress: this one cannot start now, but the interaction stays
      // (the user may try again); nothing else's is dropped for it.
      if (err instanceof PendingLoginLimit) {
        await this.#o.store.dropAttempt(attempt);
        this.#o.log.info({ scope: err.scope, limit: err.limit, address: clientAddress(req) }, 'a sign-in was refused: too many in progress');
        this.#o.events.publish(req, { type: 'auth_login', outcome: 'denied', errorCode: 'temporarily_unavailable', details: { provider: this.#o.upstreams[0]!.name } });
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '60', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
        res.end(JSON.stringify({ error: 'temporarily_unavailable', error_description: err.message }));
        return;
      }
      await this.#fail(req, res, attempt, err, this.#o.upstreams[0]!.name);
    }
  }

  /**
   * The user's answer to the consent page shown after the login: deny drops what the login kept
   * and tells the client; allow makes the grant and the client gets its code.
   */
  async confirm(req: IncomingMessage, res: ServerResponse, form: URLSearchParams): Promise<void> {
    const provider = this.#o.provider;
    const details = await provider.interactionDetails(req, res);
    const pending = await this.#o.store.takeConsent(details.uid);
    if (pending === null || !sameSecret(form.get('token') ?? '', pending.token)) {
      this.#o.events.publish(req, { type: 'auth_consent', outcome: 'failure', clientId: clientIdOf(details.params), errorCode: 'invalid_request' });
      page(res, 403, 'This confirmation is not valid (expired, already used, or not from this page). Start again from your application.');
      return;
    }
    if (form.get('decision') !== 'allow') {
      this.#o.events.publish(req, { type: 'auth_consent', outcome: 'denied', subject: pending.identity.sub, clientId: clientIdOf(details.params), errorCode: 'access_denied' });
      await this.#o.store.dropAttempt(pending.attempt);
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'the user declined' }, { mergeWithLastSubmission: false });
      return;
    }
    const clientId = String(details.params['client_id']);
    const requested = String(details.params['scope'] ?? '').split(' ').filter((s) => s.length > 0);
    const grant = new provider.Grant({ accountId: pending.identity.sub, clientId });
    // The provider knows the resource's scopes too (clients may register with them), so a
    // requested one is granted as the provider's and as the resource's, or consent is asked again.
    const oidcScopes = requested.filter((s) => s === 'openid' || s === 'offline_access' || this.#o.scopes.includes(s));
    if (oidcScopes.length > 0) grant.addOIDCScope(oidcScopes.join(' '));
    grant.addResourceScope(this.#o.resource, requested.filter((s) => this.#o.scopes.includes(s)).join(' '));
    const grantId = await grant.save();
    await this.#o.store.keepTokens(pending.attempt, grantId, pending.identity);
    this.#o.events.publish(req, { type: 'auth_consent', outcome: 'success', subject: pending.identity.sub, clientId, details: { scope: requested.join(' ') } });
    await provider.interactionFinished(req, res, { login: { accountId: pending.identity.sub }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  /**
   * A provider sent the browser back to the one callback URL every provider knows. The browser's
   * interaction cookie is sent only under the interaction's own path, so the answer goes on there
   * (the state names the interaction); nothing is decided here.
   */
  async callback(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.#callback);
    const uid = /^([\w-]{1,128})\./.exec(url.searchParams.get('state') ?? '')?.[1];
    if (uid === undefined) {
      page(res, 400, 'This sign-in link is not valid (unknown, already used or expired). Start again from your application.');
      return;
    }
    res.writeHead(303, { location: `${this.#issuerPath}${INTERACTION_PATH}/${uid}/callback${url.search}`, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end();
  }

  /** The provider's answer, under the interaction's path: its leg is checked and finished, then the next one starts. */
  async continue(req: IncomingMessage, res: ServerResponse, pathUid: string): Promise<void> {
    const url = new URL(req.url ?? '/', this.#callback);
    const state = url.searchParams.get('state');
    const leg = state === null ? null : await this.#o.store.takeLeg(state);
    if (leg === null || leg.uid !== pathUid) {
      // Nothing to send the client to: an unknown, used or expired state is a page of its own.
      page(res, 400, 'This sign-in link is not valid (unknown, already used or expired). Start again from your application.');
      return;
    }
    let uid: string;
    try {
      uid = (await this.#o.provider.interactionDetails(req, res)).uid;
    } catch {
      await this.#o.store.dropAttempt(leg.attempt);
      this.#o.events.publish(req, { type: 'auth_login', outcome: 'failure', errorCode: 'invalid_request', details: { provider: this.#o.upstreams[leg.providerIndex]!.name } });
      page(res, 400, 'This sign-in was started in another browser or has expired. Start again from your application.');
      return;
    }
    try {
      if (uid !== leg.uid) throw new LoginFailure('access_denied', 'the sign-in does not belong to this browser session');
      // The provider answered at the callback URL: that is the redirect_uri the code is bound to.
      const answered = new URL(this.#callback);
      answered.search = url.search;
      await this.#finishLeg(req, res, answered, state!, leg);
    } catch (err) {
      await this.#fail(req, res, leg.attempt, err, this.#o.upstreams[leg.providerIndex]!.name);
    }
  }

  async #startLeg(req: IncomingMessage, res: ServerResponse, uid: string, index: number, identity: UpstreamIdentity | null, attempt: string): Promise<void> {
    const upstream = this.#o.upstreams[index]!;
    // The interaction's uid first: the callback finds the interaction's path by it.
    const state = `${uid}.${random()}`;
    const nonce = random();
    const codeVerifier = client.randomPKCECodeVerifier();
    const location = await upstream.authorizationUrl(this.#callback, state, nonce, await client.calculatePKCECodeChallenge(codeVerifier)).catch((err: unknown) => {
      this.#o.log.warn({ provider: upstream.name, err: err instanceof Error ? err.message : String(err) }, 'a sign-in cannot go on: its provider cannot be reached');
      throw new LoginFailure('temporarily_unavailable', `the identity provider ${upstream.name} cannot be reached now; try again later`);
    });
    await this.#o.store.putLeg({ uid, address: limitKey(clientAddress(req)), stateHash: stateHash(state), providerIndex: index, nonce, codeVerifier, identity, attempt });
    res.writeHead(303, { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end();
  }

  async #finishLeg(req: IncomingMessage, res: ServerResponse, url: URL, state: string, leg: PendingLeg): Promise<void> {
    const upstream = this.#o.upstreams[leg.providerIndex]!;
    const error = url.searchParams.get('error');
    if (error !== null) throw new LoginFailure('access_denied', `${upstream.name} refused the sign-in (${error.slice(0, 64)})`);
    let finished: Awaited<ReturnType<UpstreamProvider['finish']>>;
    try {
      finished = await upstream.finish(url, state, leg.nonce, leg.codeVerifier);
    } catch (err) {
      this.#o.log.warn({ provider: upstream.name, err: err instanceof Error ? err.message : String(err) }, 'an upstream provider\'s sign-in could not be completed');
      throw new LoginFailure('access_denied', `the sign-in with ${upstream.name} could not be completed`);
    }
    const identity = leg.identity ?? finished.identity;
    if (identity === null) throw new LoginFailure('server_error', `${upstream.name} does not say who signed in (configure its userInfo)`);
    await this.#o.store.putTokens(leg.attempt, upstream.name, finished.tokens);
    this.#o.events.publish(req, { type: 'auth_login', outcome: 'success', subject: identity.sub, details: { provider: upstream.name } });
    if (leg.providerIndex + 1 < this.#o.upstreams.length) {
      await this.#startLeg(req, res, leg.uid, leg.providerIndex + 1, identity, leg.attempt);
      return;
    }
    await this.#complete(req, res, leg, identity);
  }

  /**
   * Every provider answered: the user is asked, at the end, in the browser that went through the
   * login (so nobody can answer for a browser they do not hold). The consent page has a URL of its
   * own, where this sends the browser: reloading it shows it again (the provider's callback that
   * led here is single-use).
   */
  async #complete(req: IncomingMessage, res: ServerResponse, leg: PendingLeg, identity: UpstreamIdentity): Promise<void> {
    const details = await this.#o.provider.interactionDetails(req, res);
    await this.#o.store.putConsent(details.uid, { token: random(), attempt: leg.attempt, identity });
    res.writeHead(303, { location: `${this.#issuerPath}${INTERACTION_PATH}/${details.uid}/consent`, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).end();
  }

  /**
   * The consent page (consent-page.ts), in the browser of the interaction only; its form carries
   * the login's single-use token bound to the interaction. Shown as often as it is asked for until
   * it is answered.
   */
  async consent(req: IncomingMessage, res: ServerResponse, pathUid: string): Promise<void> {
    const provider = this.#o.provider;
    let details: Awaited<ReturnType<Provider['interactionDetails']>>;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      page(res, 400, 'This sign-in was started in another browser or has expired. Start again from your application.');
      return;
    }
    const pending = details.uid === pathUid ? await this.#o.store.peekConsent(details.uid) : null;
    if (pending === null) {
      page(res, 410, 'This sign-in was already answered, or has expired. Return to your application.');
      return;
    }
    const clientId = String(details.params['client_id']);
    const client = await provider.Client.find(clientId);
    const chosen = typeof client?.clientName === 'string' ? displayText(client.clientName) : '';
    const scopes = String(details.params['scope'] ?? '').split(' ').filter((s) => s.length > 0);
    // The provider drops offline_access from an authorization without prompt=consent, but a
    // client allowed the refresh_token grant gets a refresh token all the same (provider.ts): say so.
    if (client?.grantTypeAllowed('refresh_token') === true && !scopes.includes('offline_access')) scopes.push('offline_access');
    consentPage(res, {
      action: `${this.#issuerPath}${INTERACTION_PATH}/${details.uid}/confirm`,
      token: pending.token,
      clientName: chosen.length > 0 ? chosen : clientId,
      clientId,
      redirectUri: String(details.params['redirect_uri'] ?? ''),
      server: this.#o.displayName ?? this.#o.resource,
      user: pending.identity.name ?? pending.identity.email ?? pending.identity.sub,
      scopes,
    });
  }

  /** A sign-in that failed at `provider` (or after it, in the chain's own steps): the client is told, the audit trail too. */
  async #fail(req: IncomingMessage, res: ServerResponse, attempt: string, err: unknown, provider: string): Promise<void> {
    await this.#o.store.dropAttempt(attempt);
    const failure = err instanceof LoginFailure ? err : new LoginFailure('server_error', 'the sign-in failed');
    const outcome = failure.error === 'access_denied' ? 'denied' : failure.error === 'server_error' ? 'error' : 'failure';
    this.#o.events.publish(req, { type: 'auth_login', outcome, errorCode: failure.error, details: { provider } });
    if (err instanceof LoginFailure) this.#o.log.info({ error: failure.error, reason: failure.message }, 'a sign-in failed');
    else this.#o.log.error({ err }, 'the sign-in chain failed');
    try {
      await this.#o.provider.interactionFinished(req, res, { error: failure.error, error_description: failure.message }, { mergeWithLastSubmission: false });
    } catch {
      if (!res.headersSent) page(res, 400, 'The sign-in failed. Start again from your application.');
    }
  }
}

/** The client an interaction is for (its authorization request's client_id). */
function clientIdOf(params: Record<string, unknown>): string | null {
  return typeof params['client_id'] === 'string' ? params['client_id'] : null;
}

/** A page of the login's own (nothing the client sent is written into it). */
function page(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.end(`<!doctype html><meta charset="utf-8"><title>Sign-in</title><p>${text}</p>`);
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'latin1');
  const b = Buffer.from(expected, 'latin1');
  return a.length === b.length && timingSafeEqual(a, b);
}

