/**
 * Structured logs (pino) on stdout: one JSON object per line for machines (the default), or
 * pino-pretty's one-line-per-record text for a person at a terminal. Request-scoped lines carry
 * the request id; secrets never reach a log (the principal's token is a private field).
 */
import { createHash } from 'node:crypto';
import process from 'node:process';
import { pino, type Logger, type LevelWithSilent } from 'pino';
import { build as prettyStream } from 'pino-pretty';

export type { Logger };

export const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** `json`: one object per line (collectors, `jq`); `pretty`: time, level, message and fields for a person. */
export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** What a person at a terminal wants, and what anything else (a pipe, a file, a collector) wants. */
export function defaultLogFormat(out: { readonly isTTY?: boolean } = process.stdout): LogFormat {
  return out.isTTY === true ? 'pretty' : 'json';
}

export function createLogger(level: LevelWithSilent = 'info', format: LogFormat = 'json'): Logger {
  const options = {
    name: 'gatehouse',
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie'], censor: '[redacted]' },
  };
  if (format === 'json') return pino(options);
  // Synchronous, in this thread: a line is on the terminal before the next statement runs, and
  // the last lines before an exit are not lost (no worker thread, as pino's transports use).
  const pretty = prettyStream({
    sync: true,
    colorize: process.stdout.isTTY === true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
  });
  return pino(options, pretty);
}

/**
 * A session's name in logs: its id is a bearer credential of the session (with the owner's
 * token), so logs above debug carry this short digest instead, enough to correlate lines.
 * A session's requests ask for the same digest again and again (the access log, the audit
 * trail): the last ones are kept (a SHA-256 costs about a microsecond), at most TAGS_KEPT, the
 * whole set dropped when full.
 */
export function sessionTag(id: string): string {
  let tag = tags.get(id);
  if (tag === undefined) {
    tag = createHash('sha256').update(id).digest('base64url').slice(0, 10);
    if (tags.size >= TAGS_KEPT) tags.clear();
    tags.set(id, tag);
  }
  return tag;
}

const TAGS_KEPT = 4096;
const tags = new Map<string, string>();
