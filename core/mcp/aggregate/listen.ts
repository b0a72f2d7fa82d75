/**
 * Change notifications across eras. A modern client asks for them with `subscriptions/listen`
 * (a filter: which lists, which resources); a legacy client gets them on its session's GET
 * stream. Toward a legacy backend the gateway opens that backend session's GET stream (and
 * `resources/subscribe` for the URIs it owns); toward a modern backend, a `subscriptions/listen`
 * of its own with the part of the filter that backend serves. What comes back passes the
 * client's filter and, for a modern client, carries its subscription's id.
 */
import { META } from '../../protocol/era.ts';
import { ownEntry, type JsonRpcMessage, type JsonRpcRequest } from '../../protocol/jsonrpc.ts';

/** What a `subscriptions/listen` asks for (2026-07-28 `notifications` filter). */
export interface ListenFilter {
  readonly toolsListChanged: boolean;
  readonly promptsListChanged: boolean;
  readonly resourcesListChanged: boolean;
  readonly resourceSubscriptions: readonly string[];
}

/** A modern client's subscription: its filter, and the id its notifications carry. */
export interface ListenSpec {
  readonly subscriptionId: string | number;
  readonly filter: ListenFilter;
}

const LIST_FLAGS: Readonly<Record<string, keyof Omit<ListenFilter, 'resourceSubscriptions'>>> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged',
};

/** Resource URIs one listen may follow (each becomes a subscription on its backend). */
const MAX_RESOURCE_SUBSCRIPTIONS = 64;

/** The filter of a `subscriptions/listen` request's params; malformed parts ask for nothing. */
export function parseFilter(params: Record<string, unknown> | undefined): ListenFilter {
  const given = params?.['notifications'];
  const n = typeof given === 'object' && given !== null ? (given as Record<string, unknown>) : {};
  const uris = Array.isArray(n['resourceSubscriptions']) ? n['resourceSubscriptions'].filter((u): u is string => typeof u === 'string' && u.length <= 2048) : [];
  return {
    toolsListChanged: n['toolsListChanged'] === true,
    promptsListChanged: n['promptsListChanged'] === true,
    resourcesListChanged: n['resourcesListChanged'] === true,
    resourceSubscriptions: [...new Set(uris)].slice(0, MAX_RESOURCE_SUBSCRIPTIONS),
  };
}

/** Whether `message` (from a backend's stream) is one the filter asks for. */
export function wanted(filter: ListenFilter, message: JsonRpcMessage): boolean {
  if (!('method' in message) || 'id' in message) return false;
  const flag = ownEntry(LIST_FLAGS, message.method);
  if (flag !== undefined) return filter[flag];
  if (message.method === 'notifications/resources/updated') {
    const uri = message.params?.['uri'];
    return typeof uri === 'string' && filter.resourceSubscriptions.includes(uri);
  }
  return false;
}

/** A notification as a modern client's subscription delivers it: tagged with the subscription's id. */
export function tagged(message: JsonRpcMessage, subscriptionId: string | number): JsonRpcMessage {
  if (!('method' in message)) return message;
  const meta = message.params?.['_meta'];
  return { ...message, params: { ...message.params, _meta: { ...(typeof meta === 'object' && meta !== null ? meta : {}), [META.subscriptionId]: subscriptionId } } };
}

/** The `subscriptions/listen` request sent to a modern backend for `filter` (its part of it). */
export function listenRequest(filter: ListenFilter): JsonRpcRequest {
  return {
    jsonrpc: '2.0',
    id: 'gatehouse-listen',
    method: 'subscriptions/listen',
    params: {
      notifications: {
        ...(filter.toolsListChanged ? { toolsListChanged: true } : {}),
        ...(filter.promptsListChanged ? { promptsListChanged: true } : {}),
        ...(filter.resourcesListChanged ? { resourcesListChanged: true } : {}),
        ...(filter.resourceSubscriptions.length > 0 ? { resourceSubscriptions: filter.resourceSubscriptions } : {}),
      },
    },
  };
}

/** The part of `filter` a backend with `capabilities` serves, for the URIs in `owned`. */
export function backendPart(filter: ListenFilter, capabilities: Readonly<Record<string, unknown>>, owned: readonly string[]): ListenFilter {
  return {
    toolsListChanged: filter.toolsListChanged && capabilities['tools'] !== undefined,
    promptsListChanged: filter.promptsListChanged && capabilities['prompts'] !== undefined,
    resourcesListChanged: filter.resourcesListChanged && capabilities['resources'] !== undefined,
    resourceSubscriptions: owned,
  };
}

/** Everything a backend with `capabilities` can tell (a legacy client's GET stream wants it all). */
export function everything(capabilities: Readonly<Record<string, unknown>>, subscribed: readonly string[]): ListenFilter {
  return backendPart({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: [] }, capabilities, subscribed);
}

/** Whether a filter asks a backend for anything at all. */
export function asksAnything(filter: ListenFilter): boolean {
  return filter.toolsListChanged || filter.promptsListChanged || filter.resourcesListChanged || filter.resourceSubscriptions.length > 0;
}
