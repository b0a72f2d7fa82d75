/**
 * The audit trail (`audit.enabled`): a subscriber of the observation seam that writes one record
 * per operation that matters, as a JSON line, to stdout, a rotated file, or syslog
 * (audit-record.ts says what a record holds). It subscribes to:
 *
 *  - `gatehouse:request:end`, for the requests of its own server: every request to the MCP
 *    endpoint (initialize, tools/call, ... by ToolHive's event types), and a refusal (401, 403)
 *    anywhere else that no plugin event of the same request recorded already;
 *  - `gatehouse:auth:event`, the embedded authorization server's sign-ins, consents,
 *    registrations and tokens, and `gatehouse:registry:change`, the registry's changes, of its
 *    own application (`origin`).
 *
 * Off, nothing subscribes and nothing of it is loaded: a request pays nothing. A record that
 * cannot be written is dropped, never an error of the request (a subscriber that throws would
 * end the process).
 */
import type { Logger } from 'pino';
import { StartupError } from '../../base/errors.ts';
import { authEvent, registryChange, requestEnd } from '../channels.ts';
import type { OperationEvent } from '../operation-event.ts';
import type { RequestRecord } from '../request-record.ts';
import { addArguments, operationLine, requestLine, requestType, type AuditLine } from './audit-record.ts';
import { RotatingFile, StandardOutput } from './audit-file.ts';
import type { AuditOutput, AuditSettings } from './audit-settings.ts';
import { SyslogSender, syslogMessage } from './syslog.ts';

/** The most request ids of plugin events kept until their requests end. */
const MAX_COVERED = 10_000;

export interface AuditTrailOptions {
  /** Whether a request's record is of this trail's server. */
  readonly owns: (server: object) => boolean;
  /** The application plugins publish events from (`PluginHost.origin`). */
  readonly origin: object;
  /** The server's route name for its MCP endpoint (`mcp`), or null (the registry). */
  readonly mcpRoute: string | null;
  /** `component` when the settings name none. */
  readonly defaultComponent: string;
  readonly log: Logger;
}

export interface AuditTrail {
  stop(): Promise<void>;
}

interface Writer {
  write(line: AuditLine): void;
  close(): Promise<void>;
}

/** The file, or a startup error naming it (a directory that cannot be made, a file that cannot be written). */
function openFile(path: string, maxSize: number, maxFiles: number): RotatingFile {
  try {
    return new RotatingFile(path, maxSize, maxFiles);
  } catch (err) {
    throw new StartupError(`audit.logFile: cannot open ${path} for the audit trail: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

function writerFor(output: AuditOutput, component: string): Writer {
  if (output.kind === 'syslog') {
    const sender = new SyslogSender(output);
    const header = { facility: output.facility, appName: output.appName ?? component };
    return {
      write: (line) => sender.send(syslogMessage(header, line.time as string, line.type as string, line.outcome as string, JSON.stringify(line))),
      close: () => sender.close(),
    };
  }
  const out = output.kind === 'file' ? openFile(output.path, output.maxSize, output.maxFiles) : new StandardOutput();
  return { write: (line) => out.write(`${JSON.stringify(line)}\n`), close: () => out.close() };
}

/** Whether `type` is recorded: `excludeEventTypes` first, then `eventTypes` when it lists any. */
export function recordsType(settings: Pick<AuditSettings, 'eventTypes' | 'excludeEventTypes'>, type: string): boolean {
  if (settings.excludeEventTypes.includes(type)) return false;
  return settings.eventTypes.length === 0 || settings.eventTypes.includes(type);
}

/** Starts the audit trail `settings` describe; null when they do not enable it (nothing subscribes). */
export function startAuditTrail(settings: AuditSettings, options: AuditTrailOptions): AuditTrail | null {
  if (!settings.enabled) return null;
  const component = settings.component ?? options.defaultComponent;
  const writer = writerFor(settings.output, component);
  let failed = false;
  const write = (build: () => AuditLine | null): void => {
    try {
      const line = build();
      if (line !== null) writer.write(line);
    } catch (err) {
      if (!failed) options.log.error({ err }, 'the audit trail could not write a record (logged once)');
      failed = true;
    }
  };
  // Requests a plugin's event already recorded (a refused publish, a refused token request): their
  // end is not recorded again as a refusal. Emptied as they end; bounded should ids never end.
  const covered = new Set<string>();
  const onRequest = (message: unknown): void => {
    const record = message as RequestRecord;
    if (!options.owns(record.server)) return;
    if (covered.size > 0 && covered.delete(record.requestId) && options.mcpRoute !== record.route) return;
    write(() => {
      const type = requestType(record, options.mcpRoute !== null && record.route === options.mcpRoute);
      if (type === null || !recordsType(settings, type)) return null;
      const line = requestLine(record, type, component);
      if (settings.includeRequestData && (record.rpcMethod === 'tools/call' || record.rpcMethod === 'prompts/get')) addArguments(line, record, settings.maxDataSize);
      return line;
    });
  };
  const onOperation = (message: unknown): void => {
    const event = message as OperationEvent;
    if (event.origin !== options.origin) return;
    if (event.requestId !== null) {
      if (covered.size >= MAX_COVERED) covered.clear();
      covered.add(event.requestId);
    }
    if (recordsType(settings, event.type)) write(() => operationLine(event, component));
  };
  requestEnd.subscribe(onRequest);
  authEvent.subscribe(onOperation);
  registryChange.subscribe(onOperation);
  return {
    async stop() {
      requestEnd.unsubscribe(onRequest);
      authEvent.unsubscribe(onOperation);
      registryChange.unsubscribe(onOperation);
      await writer.close();
    },
  };
}
