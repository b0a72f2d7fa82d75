/**
 * The session machinery of a backend group, built once per configuration generation: one part
 * per step of a request (pipeline.ts lists them), each given only what it needs. An aggregated
 * endpoint serves a group of backends through it; a transparent endpoint's era bridge serves its
 * one backend through it (`direct`), for the requests whose generation of MCP is not the
 * backend's.
 */
import type { RateLimits } from '../rate-limits.ts';
import type { Logger } from 'pino';
import type { Chain, HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import type { Era } from '../../protocol/era.ts';
import { modernMethodNotAllowed } from '../../server/mcp-endpoint.ts';
import type { OpenStreams } from '../streams.ts';
import type { BackendLink } from './backend-link.ts';
import { CallRouting } from './call-routing.ts';
import { ClientMessages } from './client-messages.ts';
import type { AggregationConfig, FailureHandlingConfig, SessionConfig } from '../../config/aggregation-config.ts';
import { SessionHealer } from './healing.ts';
import type { HealthMonitor } from './health.ts';
import { HeldStreams } from './held-streams.ts';
import { InputRounds } from './input-rounds.ts';
import { OwnMethods } from './own-methods.ts';
import { McpPipeline } from './pipeline.ts';
import type { Relay } from './relay.ts';
import { Resolver } from './resolver.ts';
import { ResumeTickets } from './resume-tickets.ts';
import { sinkFor } from './backend-messages.ts';
import { SessionLists } from './session-lists.ts';
import { ListViews } from './list-views.ts';
import { shownBy, type ShownLists } from './shown-lists.ts';
import { SessionStreams } from './session-streams.ts';
import type { SessionRecord, SessionStore } from './session-store.ts';
import { Sessions } from './sessions.ts';

export interface GroupOptions {
  /** `metadata.name` of the VirtualMCPServer (the serverInfo name clients see). */
  name: string;
  links: readonly BackendLink[];
  chain: Chain;
  streams: OpenStreams;
  aggregation: AggregationConfig;
  session: SessionConfig;
  failure: FailureHandlingConfig;
  store: SessionStore;
  health: HealthMonitor;
  /** How this replica tells the others about what it holds (relay.ts): started already. */
  relay: Relay;
  log: Logger;
  /**
   * A transparent endpoint's era bridge: one backend under its own names. A request naming a
   * tool, prompt or resource goes to it without looking the name up in its lists, as on the
   * transparent path (the backend answers for what it lacks).
   */
  direct?: boolean;
  /**
   * Whether this process's live sessions expire on a clock of their own (default): not needed
   * when the store reports every session it ends (compose.ts, SessionStorage.reportsEnds).
   */
  localExpiry?: boolean;
  /** Backends a config reload removed (sessions may still call their tools): named when one is called. */
  removedBackends?: readonly string[];
  /** `spec.config.rateLimiting` (null or unset: none). */
  limits?: RateLimits | null;
}

/** What ends the backend sessions of a session the memory store expired (compose.ts). */
export interface SessionEnder {
  endBackends(ctx: Context | null, record: SessionRecord): Promise<void>;
}

/** What a generation's sessions showed their clients, handed to the next generation at a reload (shown-lists.ts). */
export interface ShownCarrier {
  shownLists(): Map<string, ShownLists>;
  carryShown(shown: Map<string, ShownLists>): void;
}

export class BackendGroup implements SessionEnder, ShownCarrier {
  readonly pipeline: McpPipeline;
  readonly sessions: Sessions;
  readonly streams: SessionStreams;
  readonly #o: GroupOptions;
  readonly #rounds: InputRounds;

  constructor(options: GroupOptions) {
    this.#o = options;
    const { chain, links, log } = options;
    const byName = new Map(links.map((link) => [link.name, link]));
    const healer = new SessionHealer({ links, store: options.store, health: options.health, log, sink: (session, link) => sinkFor(session, link.index) });
    const views = chain.views === null ? null : new ListViews(chain.views);
    const lists = new SessionLists({ links, byName, aggregation: options.aggregation, healer, log, views });
    const direct = options.direct === true && links.length === 1 ? links[0]! : null;
    const resolver = new Resolver({ links, byName, aggregation: options.aggregation, lists, direct, removedBackends: options.removedBackends ?? [], admits: views?.admits === true });
    this.sessions = new Sessions({ name: options.name, links, byName, chain, store: options.store, localExpiry: options.localExpiry ?? true, session: options.session, failure: options.failure, health: options.health, healer, log, knows: views === null ? null : (ctx, backend) => views.knowsBackend(ctx, backend) });
    this.#rounds = new InputRounds({ chain, healer, relay: options.relay, log });
    const held = new HeldStreams(healer);
    const tickets = new ResumeTickets(options.relay);
    const knows = views === null ? null : (ctx: Context, backend: string): boolean => views.knowsBackend(ctx, backend);
    const routing = new CallRouting({ chain, streams: options.streams, healer, rounds: this.#rounds, held, tickets, maxSessionBytes: options.session.maxSessionBytes, knows });
    const admits = views?.admits === true ? views : null;
    this.streams = new SessionStreams({ links, byName, chain, streams: options.streams, sessions: this.sessions, lists, healer, held, routing, tickets, views: admits });
    const own = new OwnMethods({ name: options.name, links, chain, store: options.store, aggregation: options.aggregation, lists, healer, streams: this.streams });
    const messages = new ClientMessages(links, healer, this.#rounds);
    this.pipeline = new McpPipeline({ chain, maxSessionBytes: options.session.maxSessionBytes, sessions: this.sessions, resolver, views: admits, limits: options.limits ?? null, messages, own, routing });
    options.health.onRecovered((name) => this.streams.recovered(name));
  }

  /** What each live session's client was shown of its lists (shown-lists.ts), by session id. */
  shownLists(): Map<string, ShownLists> {
    const shown = new Map<string, ShownLists>();
    for (const session of this.sessions.live()) {
      const lists = shownBy(session);
      if (lists !== null) shown.set(session.id, lists);
    }
    return shown;
  }

  /** The previous generation's `shownLists()`: each session's client is told what changed when its stream opens here. */
  carryShown(shown: Map<string, ShownLists>): void {
    this.streams.carryShown(shown);
  }

  /** A GET (the session's stream) or DELETE (the session's end); a modern client has neither. */
  streamOrEnd(ctx: Context): HookOutcome | Promise<HookOutcome> {
    return modernMethodNotAllowed(ctx) ?? (ctx.req.method === 'GET' ? this.streams.open(ctx) : this.sessions.delete(ctx));
  }

  /**
   * The era of the group's first backend (a transparent endpoint's bridge asks it of its one
   * backend): at once when it is known, else after a probe (an unreachable backend: unknown, null).
   */
  backendEra(ctx: Context): Era | null | Promise<Era | null> {
    const link = this.#o.links[0]!;
    const known = this.#o.health.profiles.get(link, ctx.startedAt);
    if (known !== undefined) return known.era;
    return this.#o.health.profiles.probe(ctx, link).then(
      (profile) => profile?.era ?? null,
      () => null,
    );
  }

  endBackends(ctx: Context | null, record: SessionRecord): Promise<void> {
    return this.sessions.endBackends(ctx, record);
  }

  close(): void {
    this.#o.health.stop();
    this.#rounds.close();
    this.sessions.close();
  }

  status(mode: 'aggregated' | 'transparent'): unknown {
    return { mode, name: this.#o.name, sessions: this.sessions.size, backends: this.#o.health.all() };
  }
}
