/**
 * Structured logs (pino): one JSON object per line on stdout. Request-scoped lines carry the
 * request id; secrets never reach a log (the principal's token is a private field).
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function createLogger(level: LevelWithSilent = 'info', name = 'gatehouse'): Logger {
  return pino({
    name,
    level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', 'headers.cookie'], censor: '[redacted]' },
  });
}
