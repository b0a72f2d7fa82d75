/** A pino logger whose JSON lines are kept in memory, to assert on what was (not) logged. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../../core/observe/log.ts';

export interface CapturedLog {
  readonly log: Logger;
  /** Every line written so far, parsed. */
  lines(): Record<string, unknown>[];
  /** Everything written so far, raw (to search for leaked secrets). */
  text(): string;
}

export function captureLog(level: pino.LevelWithSilent = 'debug'): CapturedLog {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const log = pino({ level }, sink);
  const text = (): string => chunks.join('');
  return {
    log,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
