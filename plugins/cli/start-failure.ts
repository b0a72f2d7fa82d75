/**
 * A start that failed, told in one line without a stack trace: the command line and the example
 * scripts print it and exit with the code exit-codes.ts gives it.
 */
import process from 'node:process';
import { StartupError } from '@gatehouse-mcp/gateway';
import { exitCodeOf, EXIT_FAILURE } from './exit-codes.ts';

/** Prints `message` to stderr and exits with `code`. */
export function exitWith(message: string, code = EXIT_FAILURE): never {
  process.stderr.write(message.endsWith('\n') ? message : message + '\n');
  process.exit(code);
}

/** A listen failure in one line, or null when `err` is something else. */
function listenProblem(err: unknown, host: string, port: number): string | null {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'EADDRINUSE') return `cannot listen on ${host}:${port}: the address is already in use`;
  if (code === 'EACCES' || code === 'EADDRNOTAVAIL') return `cannot listen on ${host}:${port}: ${(err as Error).message}`;
  return null;
}

/** `err` as a StartupError when it is a listen failure on `where`; otherwise `err` itself. */
export function asStartupError(err: unknown, where: { host: string; port: number }): unknown {
  const problem = listenProblem(err, where.host, where.port);
  return problem === null ? err : new StartupError(problem, { cause: err });
}

/** A StartupError or a listen failure is printed and exits (2 for a configuration problem, else 1); anything else is a bug and is rethrown. */
export function exitOnStartFailure(err: unknown, where: { host: string; port: number }): never {
  const failure = asStartupError(err, where);
  if (failure instanceof StartupError) exitWith(failure.message, exitCodeOf(failure));
  throw err;
}
