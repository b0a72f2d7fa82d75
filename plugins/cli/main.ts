/**
 * The `gatehouse` command line: runs the command tree and turns how it ended into the exit code
 * (exit-codes.ts). A failure the user can act on is printed as it is, without a stack trace;
 * anything else is a bug and shows its stack.
 */
import process from 'node:process';
import { CommanderError } from 'commander';
import { StartupError } from '@gatehouse-mcp/gateway';
import { endOutputQuietlyOnClosedPipe } from './closed-pipe.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, exitCodeOf } from './exit-codes.ts';
import { buildProgram } from './program.ts';
import { isWorker } from './workers/worker.ts';

endOutputQuietlyOnClosedPipe(process.stdout, process.stderr);

/** Set when the command run is `validate`: it ends once its output is written. */
let oneShot = false;
/** Set when the command failed: a worker of `server.workers` then ends, though its channel to the primary would keep it alive. */
let failed = false;

try {
  const program = buildProgram();
  program.hook('preAction', (_program, action) => {
    if (action.name() === 'validate') oneShot = true;
  });
  await program.parseAsync(process.argv);
} catch (err) {
  failed = true;
  if (err instanceof CommanderError) {
    // --help and --version end with 0; every other commander error (unknown command or option,
    // a missing or wrong value, a command without its subcommand) was a wrong command line.
    process.exitCode = err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  } else if (err instanceof StartupError) {
    process.stderr.write(`${err.message}\n`);
    process.exitCode = exitCodeOf(err);
  } else {
    process.stderr.write(`gatehouse: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = EXIT_FAILURE;
  }
}

// validate loads the plugin modules a file names: one that leaves a timer, a socket or a client
// open would keep the process (and a CI step that validates) from ending after its verdict.
if (oneShot || (failed && isWorker())) {
  await Promise.all([written(process.stdout), written(process.stderr)]);
  process.exit();
}

/** Resolves once what was written to `stream` before is flushed (or the stream failed). */
function written(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    try {
      stream.write('', () => resolve());
    } catch {
      resolve();
    }
  });
}
