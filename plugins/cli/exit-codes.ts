/**
 * What the `gatehouse` command's exit code says, so that a script, a supervisor or Kubernetes
 * can tell "fix the input" from "something failed":
 *   0  done (validate: the file is good; serve: stopped by SIGTERM or SIGINT after draining)
 *   1  it could not start or it failed while running: an address in use, a credential file
 *      missing, a database out of reach, a failed shutdown, a second stop signal, a bug
 *   2  the command line or the configuration is wrong; nothing was started
 */
import { ConfigError, NotAvailableError, PluginConfigError, StartupError } from '@gatehouse-mcp/gateway';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** The configuration file has problems (one line each, with file position and YAML path). */
export class InvalidConfigError extends StartupError {}

/** Problems of the configuration, found before or while starting: the input must change, so 2. */
export function isConfigProblem(err: unknown): boolean {
  return err instanceof InvalidConfigError || err instanceof ConfigError || err instanceof PluginConfigError || err instanceof NotAvailableError;
}

/** The exit code of a command that ended with `err`. */
export function exitCodeOf(err: unknown): number {
  return isConfigProblem(err) ? EXIT_USAGE : EXIT_FAILURE;
}
