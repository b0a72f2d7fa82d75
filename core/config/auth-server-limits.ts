/**
 * The embedded authorization server's bounds and their defaults (`authServerConfig.rateLimiting`,
 * `maxClients`, `maxPendingLogins`, `maxPendingLoginsPerAddress`), kept apart so that the schema
 * and the code (and tests that build a config without YAML) share one set of numbers.
 *
 * Why these numbers: a sign-in is about 6 requests of the login group per upstream provider and
 * one authorization; an interaction lives 10 minutes, so the shared authorization budget (3,000 a
 * minute) keeps at most 30,000 interactions, under the memory storage's 100,000 records and under
 * `maxPendingLogins`: a flood that stays within the budgets evicts nobody's sign-in. The token
 * budget is above what one process serves (833 refreshes a second measured): it bounds a flood,
 * not normal use. Registrations are rare (one per client install).
 */
import type { BudgetBounds } from '../base/rate-limit.ts';

/** The groups of endpoints that have a budget of their own. */
export const AUTH_SERVER_ENDPOINT_GROUPS = ['registration', 'authorization', 'login', 'token', 'metadata'] as const;
export type AuthServerEndpointGroup = (typeof AUTH_SERVER_ENDPOINT_GROUPS)[number];

/** What each group covers, for the documentation and the refusals. */
export const AUTH_SERVER_ENDPOINT_NAMES: Readonly<Record<AuthServerEndpointGroup, string>> = {
  registration: 'client registrations',
  authorization: 'authorization requests',
  login: 'sign-in steps',
  token: 'token requests',
  metadata: 'metadata and key requests',
};

const perMinute = (perAddress: number, shared: number): BudgetBounds => ({
  perKey: { maxTokens: perAddress, refillPeriodMs: 60_000 },
  shared: { maxTokens: shared, refillPeriodMs: 60_000 },
});

export const DEFAULT_AUTH_SERVER_RATE_LIMITS: Readonly<Record<AuthServerEndpointGroup, BudgetBounds>> = {
  registration: perMinute(10, 600),
  authorization: perMinute(60, 3_000),
  login: perMinute(120, 12_000),
  token: perMinute(300, 60_000),
  metadata: perMinute(600, 60_000),
};

/** Registered clients kept at most (each store); past it, the oldest never used makes room. */
export const DEFAULT_MAX_CLIENTS = 100_000;
/** Sign-ins in progress (an upstream provider's leg waiting for its callback) at most, in total and per client address. */
export const DEFAULT_MAX_PENDING_LOGINS = 50_000;
export const DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS = 100;

/** Every bound at its default: what a config built in code (a test, a benchmark) starts from. */
export const DEFAULT_AUTH_SERVER_BOUNDS = {
  rateLimiting: DEFAULT_AUTH_SERVER_RATE_LIMITS,
  maxClients: DEFAULT_MAX_CLIENTS,
  maxPendingLogins: DEFAULT_MAX_PENDING_LOGINS,
  maxPendingLoginsPerAddress: DEFAULT_MAX_PENDING_LOGINS_PER_ADDRESS,
} as const;
