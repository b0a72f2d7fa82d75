/**
 * What a routed exchange (routed.ts) reports to whoever sent it, and asks of it: one object for
 * every exchange (call-routing.ts), so that an exchange holds no closures. Generic in the
 * exchange, `RoutedExchange`, which names it in turn.
 */
import type { GatewayError } from '../../base/errors.ts';
import type { JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc.ts';
import type { ResumeTickets } from './resume-tickets.ts';

export interface RouteListener<RoutedExchange> {
  /** The backend says it lost the session: the request was not executed and may be sent again. */
  lost(exchange: RoutedExchange): void;
  /**
   * The backend's refusal may mean it lost the session (a 400/410 without a result): whether it
   * still knows the session, asked of the backend (a ping on it).
   */
  stillKnown(exchange: RoutedExchange): Promise<boolean>;
  /** The exchange ended: `problem` is null when the backend answered, else why it failed. */
  outcome(exchange: RoutedExchange, problem: GatewayError | null): void;
  /**
   * A modern backend asked a legacy client for input (`input_required`): the listener takes the
   * call over from here (input-relay.ts); the exchange writes nothing more to the client.
   */
  inputRequired(exchange: RoutedExchange, response: JsonRpcResponse): void;
  /** The error the client gets for `error` (which names the backend): the same, or one that does not name it (plugin views). */
  errorFor(exchange: RoutedExchange, error: GatewayError): GatewayError;
  /** True when plugin views decide what each caller gets: no answer to a modern client then says `cacheScope: public`. */
  readonly perCaller: boolean;
  /**
   * A legacy backend asked a modern client for input (a request on the call's stream): the
   * listener parks the call and returns the `requestState` the client's retry must carry, or
   * null when it cannot (the listener then answered the backend's request itself).
   */
  park(exchange: RoutedExchange, requests: ReadonlyMap<string, JsonRpcRequest>): string | null;
  /** Issues the tickets of SSE answers' event ids, and says whether a resumed stream may deliver a response. */
  readonly tickets: ResumeTickets;
}
