/**
 * What a plugin tells the seam about an operation an audit records, that is no request of its
 * own: the embedded authorization server's sign-ins, consents, registrations and tokens
 * (`gatehouse:auth:event`), the registry's changes (`gatehouse:registry:change`). The plugin
 * publishes where the operation happens; the audit trail (observe/audit/) is the subscriber, so
 * the plugin writes no record itself and pays one `hasSubscribers` read when nobody listens.
 *
 * Never a token, a code, a client secret or a session id: an event says who, what and how it
 * ended, not with what.
 */
import type { Channel } from 'node:diagnostics_channel';
import { authEvent, registryChange } from './channels.ts';
import type { ObservedPrincipal } from './request-record.ts';

/** ToolHive's audit outcomes: done; refused by a rule (authentication, policy, a limit, the user); the client's mistake; the server's failure. */
export type AuditOutcome = 'success' | 'denied' | 'failure' | 'error';

export interface OperationEvent {
  /** The application the publishing plugin runs in (`PluginHost.origin`): a subscriber keeps to its own. */
  readonly origin: object;
  /** The event type (observe/audit/audit-events.ts: `auth_login`, `registry_publish`, ...). */
  readonly type: string;
  readonly outcome: AuditOutcome;
  /** Milliseconds since the epoch. */
  readonly time: number;
  /** The gateway request it happened in (the access log's `requestId`), when known. */
  readonly requestId: string | null;
  /** Who: the caller's token, or the user who signed in. */
  readonly principal: ObservedPrincipal | null;
  /** The OAuth client concerned, when the principal does not say (a registration, a consent, a token request). */
  readonly clientId: string | null;
  readonly clientAddress: string | null;
  /** The error code of a refusal or failure (an OAuth error, the gateway's code). */
  readonly errorCode: string | null;
  /** What it was about, a few short strings: `provider` (an upstream identity provider), `grantType`, `registry`, `name`, `version`, `source`. */
  readonly details: Readonly<Record<string, string>>;
}

function publishOn(channel: Channel, build: () => OperationEvent): void {
  if (channel.hasSubscribers) channel.publish(build());
}

/** Publishes an authorization-server event on `gatehouse:auth:event`; `build` runs only when someone listens. */
export function publishAuthEvent(build: () => OperationEvent): void {
  publishOn(authEvent, build);
}

/** Publishes a registry change on `gatehouse:registry:change`; `build` runs only when someone listens. */
export function publishRegistryChange(build: () => OperationEvent): void {
  publishOn(registryChange, build);
}
