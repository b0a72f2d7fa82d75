/**
 * Per-request state of the registry API, in typed slots: what one step finds, the next uses.
 */
import { defineSlot } from '@gatehouse-mcp/gateway';
import type { RegistryRecord, SourceRecord } from '../store/records.ts';

/** The registry named in the path (after `loadRegistry`). */
export const REGISTRY = defineSlot<RegistryRecord>('registry.registry');
/** The source named in the path (after `loadSource`). */
export const SOURCE = defineSlot<SourceRecord>('registry.source');
/** The parsed JSON body (after `readJsonBody`). */
export const BODY = defineSlot<unknown>('registry.body');

export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`internal error: ${what} is not set (a step is missing from the endpoint)`);
  return value;
}
