/**
 * The options the commands share, as commander Options: each parses and checks its own value,
 * so a wrong one is refused with its name before anything starts (exit 2).
 */
import { InvalidArgumentError, Option } from 'commander';
import type { LevelWithSilent } from 'pino';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat } from '@gatehouse-mcp/gateway';

/** What `validate` takes. */
export interface ValidateOptions {
  config: string;
}

/** What `serve` takes. `logFormat` undefined: pretty on a terminal, JSON otherwise. */
export interface ServeOptions extends ValidateOptions {
  host: string;
  port: number;
  logLevel: LevelWithSilent;
  logFormat: LogFormat | undefined;
  /** `vmcp serve --watch-config`: reload when the file changes. */
  watchConfig?: boolean;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('It is not a port number (0-65535; 0 picks a free one)');
  return port;
}

/** `serve` of either server: a change of the file reloads it, as SIGHUP does. */
export function watchConfigOption(): Option {
  return new Option('--watch-config', 'reload the configuration when its file changes (as on SIGHUP); off by default');
}

export function configOption(what: string): Option {
  return new Option('-c, --config <FILE>', what).makeOptionMandatory();
}

export function serveOptions(defaultPort: number): Option[] {
  return [
    new Option('--host <ADDRESS>', 'address to listen on (0.0.0.0: every IPv4 interface, as in a container)').default('127.0.0.1'),
    new Option('--port <PORT>', 'port to listen on (0 picks a free one)').default(defaultPort).argParser(parsePort),
    new Option('--log-level <LEVEL>', 'the least severe level logged').choices(LOG_LEVELS).default('info').env('GATEHOUSE_LOG_LEVEL'),
    new Option('--log-format <FORMAT>', 'json (one object per line) or pretty (for a person); default: pretty when stdout is a terminal, json otherwise')
      .choices(LOG_FORMATS)
      .env('GATEHOUSE_LOG_FORMAT'),
  ];
}
