/**
 * Output to a closed pipe ends quietly. `gatehouse --help | head -1`: head exits after one line,
 * the next write fails with EPIPE, and Node reports it as an 'error' event of process.stdout,
 * which nothing handled, so the process died with a stack trace and exit code 1. What a reader
 * stopped reading is simply not written: the stream is closed, every later write to it dropped,
 * and the command ends as it would have (--help with 0, a bad file with 2, a server keeps
 * serving). The logger writes to the same descriptor through its own stream, which already stops
 * at EPIPE (pino's "safe" destination).
 */

function quietOnClosedPipe(this: NodeJS.WriteStream, err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') {
    this.destroy();
    return;
  }
  // Anything else is what it was before: an error nobody expected.
  throw err;
}

/** Makes a closed stdout or stderr end its output quietly instead of the process. */
export function endOutputQuietlyOnClosedPipe(...streams: NodeJS.WriteStream[]): void {
  for (const stream of streams) stream.on('error', quietOnClosedPipe);
}
