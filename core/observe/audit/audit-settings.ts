/**
 * The audit settings both servers resolve from their `audit` section (the VirtualMCPServer's
 * `spec.config.audit`, the registry's top-level `audit`; ToolHive's field names,
 * core/config/audit-schema.ts), as the audit trail takes them.
 */

/** Where the records go: one output per server. */
export type AuditOutput =
  | { readonly kind: 'stdout' }
  | { readonly kind: 'file'; readonly path: string; readonly maxSize: number; readonly maxFiles: number }
  | { readonly kind: 'syslog'; readonly transport: 'udp' | 'tcp'; readonly host: string; readonly port: number; readonly facility: number; readonly appName: string | null };

export interface AuditSettings {
  readonly enabled: boolean;
  /** The `component` of every record; null: the server's own name (`gatehouse-vmcp`, `gatehouse-registry`). */
  readonly component: string | null;
  /** Only these event types are recorded (empty: all of them). */
  readonly eventTypes: readonly string[];
  /** These are never recorded (before eventTypes). */
  readonly excludeEventTypes: readonly string[];
  /** A call's arguments (`tools/call`, `prompts/get`) in its record, up to maxDataSize bytes of JSON. */
  readonly includeRequestData: boolean;
  readonly maxDataSize: number;
  readonly output: AuditOutput;
}

/** No audit: what a configuration without an `audit` section (or with `enabled: false`) resolves to. */
export const AUDIT_OFF: AuditSettings = Object.freeze({
  enabled: false,
  component: null,
  eventTypes: Object.freeze([]),
  excludeEventTypes: Object.freeze([]),
  includeRequestData: false,
  maxDataSize: 1024,
  output: Object.freeze({ kind: 'stdout' }),
});
