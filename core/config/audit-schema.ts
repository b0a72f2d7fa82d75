/**
 * The `audit` section of both servers' configuration (the VirtualMCPServer's
 * `spec.config.audit`, where ToolHive's vMCP has it, and the registry's top-level `audit`):
 * ToolHive's field names (`enabled`, `component`, `eventTypes`, `excludeEventTypes`,
 * `includeRequestData`, `includeResponseData`, `maxDataSize`, `logFile`), plus Gatehouse's
 * `rotation` of the file and `syslog`. Off unless enabled.
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { addIssue, q, text, whenMapping, type Ctx } from './formats.ts';
import { sizeSchema } from './size.ts';
import { AUDIT_EVENT_TYPES } from '../observe/audit/audit-events.ts';
import { AUDIT_OFF, type AuditOutput, type AuditSettings } from '../observe/audit/audit-settings.ts';
import { SYSLOG_FACILITIES } from '../observe/audit/syslog.ts';

const eventType = z.string().superRefine((value, ctx) => {
  if (!AUDIT_EVENT_TYPES.includes(value)) ctx.addIssue(`is not an event type: ${q(value)} (the types: ${AUDIT_EVENT_TYPES.join(', ')})`);
});

const syslogAddress = z.string().superRefine((value, ctx) => {
  const match = /^(udp|tcp):\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/.exec(value);
  const port = Number(match?.[4] ?? 0);
  if (match === null || port < 1 || port > 65535) ctx.addIssue(`must be udp://host:port or tcp://host:port, for example udp://127.0.0.1:514 (got ${q(value)})`);
});

const syslog = z.strictObject({
  address: syslogAddress,
  facility: z.enum(Object.keys(SYSLOG_FACILITIES) as [string, ...string[]]).default('local0'),
  /** APP-NAME of each message; the record's component when absent. */
  appName: text.optional(),
});

const rotation = z.strictObject({
  /** The file is rotated when a record would take it past this size. */
  maxSize: sizeSchema.default(100 * 1024 * 1024),
  /** Rotated files kept (`<logFile>.1` … `.<maxFiles>`). */
  maxFiles: z.number().int().min(1).max(100).default(5),
});

function oneOutput(section: { logFile?: string; syslog?: unknown; rotation?: unknown; includeResponseData: boolean; detectApplicationErrors?: boolean }, ctx: Ctx): void {
  if (section.logFile !== undefined && section.syslog !== undefined) addIssue(ctx, ['syslog'], 'logFile and syslog are both set: an audit trail has one output (remove one)', 'key');
  if (section.rotation !== undefined && section.logFile === undefined) addIssue(ctx, ['rotation'], 'is the rotation of logFile, which is not set', 'key');
  if (section.includeResponseData) {
    addIssue(ctx, ['includeResponseData'], 'Gatehouse does not record response data (a response is streamed to the client, not held): remove it, or set it to false');
  }
  if (section.detectApplicationErrors === true) {
    addIssue(ctx, ['detectApplicationErrors'], 'Gatehouse does not read a backend\'s answer for the audit (it passes through as it came): the errors a record names are the gateway\'s own; remove it, or set it to false');
  }
}

export const auditSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    component: text.optional(),
    eventTypes: z.array(eventType).default([]),
    excludeEventTypes: z.array(eventType).default([]),
    includeRequestData: z.boolean().default(false),
    includeResponseData: z.boolean().default(false),
    detectApplicationErrors: z.boolean().optional(),
    maxDataSize: z.number().int().min(1).max(1024 * 1024).default(1024),
    logFile: text.optional(),
    rotation: rotation.optional(),
    syslog: syslog.optional(),
  })
  .superRefine(oneOutput, whenMapping);

export type AuditInput = z.output<typeof auditSchema>;

function outputOf(section: AuditInput, configDir: string): AuditOutput {
  if (section.syslog !== undefined) {
    const url = new URL(section.syslog.address);
    return {
      kind: 'syslog',
      transport: url.protocol === 'tcp:' ? 'tcp' : 'udp',
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port),
      facility: SYSLOG_FACILITIES[section.syslog.facility]!,
      appName: section.syslog.appName ?? null,
    };
  }
  if (section.logFile !== undefined) {
    const path = isAbsolute(section.logFile) ? section.logFile : resolve(configDir, section.logFile);
    return { kind: 'file', path, maxSize: section.rotation?.maxSize ?? 100 * 1024 * 1024, maxFiles: section.rotation?.maxFiles ?? 5 };
  }
  return { kind: 'stdout' };
}

/** The settings the audit trail takes; AUDIT_OFF when the section is absent or not enabled. A relative logFile is the config file's directory's. */
export function toAuditSettings(section: AuditInput | undefined, configDir: string): AuditSettings {
  if (section === undefined || !section.enabled) return AUDIT_OFF;
  return {
    enabled: true,
    component: section.component ?? null,
    eventTypes: section.eventTypes,
    excludeEventTypes: section.excludeEventTypes,
    includeRequestData: section.includeRequestData,
    maxDataSize: section.maxDataSize,
    output: outputOf(section, configDir),
  };
}
