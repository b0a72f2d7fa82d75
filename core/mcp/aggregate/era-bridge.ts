/**
 * A transparent endpoint's era bridge: the requests whose generation of MCP is not its one
 * backend's (a 2026-07-28 client in front of a 2025 backend, or a 2025 client in front of a
 * 2026-07-28 one) are served through the session machinery of a group of that one backend
 * (group.ts, `direct`: names pass as the client gave them), which speaks to each side in its own
 * era (sessions, envelopes, requests for input). It also probes the backend's era and watches
 * its health.
 */
import type { HookOutcome } from '../../server/chain.ts';
import type { Context } from '../../plugin-api/context.ts';
import type { Era } from '../../protocol/era.ts';
import type { EraBridge as Bridge } from '../transparent-endpoint.ts';
import { BackendGroup, type GroupOptions, type SessionEnder, type ShownCarrier } from './group.ts';
import type { ShownLists } from './shown-lists.ts';
import type { SessionRecord } from './session-store.ts';

export class EraBridge implements Bridge, SessionEnder, ShownCarrier {
  readonly #group: BackendGroup;

  constructor(options: GroupOptions) {
    this.#group = new BackendGroup({ ...options, direct: true });
  }

  backendEra(ctx: Context): Era | null | Promise<Era | null> {
    return this.#group.backendEra(ctx);
  }

  handleParsed(ctx: Context): void {
    this.#group.pipeline.serve(ctx);
  }

  /** A GET stream or DELETE of a session the bridge holds (a legacy client in front of a modern backend). */
  streamOrEnd(ctx: Context): HookOutcome | Promise<HookOutcome> {
    return this.#group.streamOrEnd(ctx);
  }

  endBackends(ctx: Context | null, record: SessionRecord): Promise<void> {
    return this.#group.endBackends(ctx, record);
  }

  close(): void {
    this.#group.close();
  }

  shownLists(): Map<string, ShownLists> {
    return this.#group.shownLists();
  }

  carryShown(shown: Map<string, ShownLists>): void {
    this.#group.carryShown(shown);
  }

  status(): { backends: unknown } {
    return this.#group.status('transparent') as { backends: unknown };
  }
}
