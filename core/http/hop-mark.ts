/**
 * The gateway's mark in `Via` (RFC 9110 §7.6.3), and what a request that arrives with it says: a
 * loop. A backend URL that leads back to the gateway (its own address, its public name through a
 * load balancer or an ingress, a registry entry a publisher pointed at it) would make each
 * request to the MCP endpoint call the endpoint again, and an aggregated request fan out again,
 * without end. So, as proxies do:
 *
 *  - every request the gateway sends a backend carries `Via`: the Via the client's request came
 *    with (if any), then this gateway's entry, `1.1 gatehouse-<16 hex digits>`, random for each
 *    server (a gateway embedded twice in one process has two);
 *  - a request to the MCP endpoint whose Via holds this gateway's entry came round a loop, and is
 *    answered 508 Loop Detected before anything else runs (no authentication, no backend call);
 *  - so is one that has already passed MAX_GATEWAY_HOPS Gatehouse gateways: replicas behind one
 *    load balancer have an entry each, so a loop through them ends when a request reaches a
 *    replica it passed (one more hop than there are replicas at most), or at this bound.
 *
 * The entry passes unchanged through proxies in between (they append to Via, or pass it on), so
 * it works through a load balancer, where comparing a backend's address with the gateway's own
 * would not. Checked on the MCP endpoint only: no other route calls a backend. A client that
 * sends a gateway's own entry only has its own request refused.
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from '../base/errors.ts';

/** Gateways in a row past which a request is refused (deeper chains of gateways are not deployed; loops are). */
export const MAX_GATEWAY_HOPS = 8;

/** A Gatehouse gateway's pseudonym in Via. */
const PSEUDONYM = /\bgatehouse-[0-9a-f]{16}\b/g;

export class HopMark {
  /** `gatehouse-<16 hex digits>`: this gateway in Via. */
  readonly pseudonym: string;
  /** `1.1 gatehouse-…`: the Via entry it appends. */
  readonly entry: string;

  constructor(pseudonym = `gatehouse-${randomBytes(8).toString('hex')}`) {
    this.pseudonym = pseudonym;
    this.entry = `1.1 ${pseudonym}`;
  }

  /** The Via of a request to a backend: the client request's (`incoming`, if any), then this gateway's entry. */
  via(incoming: string | undefined): string {
    return incoming === undefined ? this.entry : `${incoming}, ${this.entry}`;
  }

  /** Throws check(via)'s refusal, if any. */
  refuseLoop(via: string): void {
    const refusal = this.check(via);
    if (refusal !== null) throw refusal;
  }

  /** Why a request that arrived with `via` must not be served (it came round a loop, or through too many gateways); null when it may. */
  check(via: string): GatewayError | null {
    if (via.includes(this.pseudonym)) {
      return new GatewayError('loop_detected', 'this request has already passed through this gateway (its Via names it): a backend URL of the gateway leads back to the gateway itself', {
        detail: `Via: ${via.slice(0, 300)}`,
      });
    }
    const hops = via.match(PSEUDONYM)?.length ?? 0;
    if (hops < MAX_GATEWAY_HOPS) return null;
    return new GatewayError('loop_detected', `this request has already passed through ${hops} Gatehouse gateways (its Via names them; at most ${MAX_GATEWAY_HOPS - 1} may come before this one): a loop through several gateways, or a chain too long`, {
      detail: `Via: ${via.slice(0, 300)}`,
    });
  }
}
