/**
 * The `gatehouse` command line:
 *   gatehouse vmcp serve --config FILE [--host 127.0.0.1] [--port 4483] [--log-level info]
 *   gatehouse vmcp validate --config FILE
 * `validate` prints every problem of the file (each with its YAML path) and exits 1, or exits 0.
 * `serve` refuses a bad file the same way. SIGTERM / SIGINT drain in-flight requests, close SSE
 * streams cleanly and exit 0.
 */
import { parseArgs } from 'node:util';
import type { LevelWithSilent } from 'pino';
import { formatProblems } from './config/problems.ts';
import { validateVmcpFile } from './config/vmcp.ts';
import { LOG_LEVELS, createLogger } from './observe/log.ts';
import { PluginConfigError } from './plugin-loader.ts';
import { NotAvailableError, startVmcp } from './vmcp.ts';
import { vmcpBuiltins } from '../plugins/vmcp.ts';

const USAGE = `Usage:
  gatehouse vmcp serve --config FILE [--host 127.0.0.1] [--port 4483] [--log-level info]
  gatehouse vmcp validate --config FILE

Options:
  --config FILE      multi-document YAML of MCPGroup, MCPServer, VirtualMCPServer,
                     MCPExternalAuthConfig and Secret resources
  --host ADDRESS     address to listen on (default 127.0.0.1)
  --port PORT        port to listen on (default 4483; 0 picks a free one)
  --log-level LEVEL  ${LOG_LEVELS.join(', ')} (default info)
`;

class UsageError extends Error {}

function fail(message: string, code = 1): never {
  process.stderr.write(message.endsWith('\n') ? message : message + '\n');
  process.exit(code);
}

interface Options {
  config: string;
  host: string;
  port: number;
  logLevel: LevelWithSilent;
}

function parseOptions(args: string[]): Options {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '4483' },
      'log-level': { type: 'string', default: 'info' },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  if (values.config === undefined) throw new UsageError('--config FILE is required');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port "${values.port}" is not a port number`);
  const level = values['log-level'] as LevelWithSilent;
  if (!LOG_LEVELS.includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  return { config: values.config, host: values.host!, port, logLevel: level };
}

async function vmcpValidate(options: Options): Promise<void> {
  const result = await validateVmcpFile(options.config);
  if (!result.ok) fail(formatProblems(result.problems));
  const config = result.config;
  process.stdout.write(`${options.config}: OK (VirtualMCPServer/${config.name}, group "${config.groupRef}" with ${config.backends.length} backend${config.backends.length === 1 ? '' : 's'})\n`);
}

async function vmcpServe(options: Options): Promise<void> {
  const result = await validateVmcpFile(options.config);
  if (!result.ok) fail(formatProblems(result.problems));
  const log = createLogger(options.logLevel);
  let running;
  try {
    running = await startVmcp({ config: result.config, host: options.host, port: options.port, log, builtins: vmcpBuiltins(result.config) });
  } catch (err) {
    if (err instanceof NotAvailableError || err instanceof PluginConfigError) fail(err.message);
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE') fail(`cannot listen on ${options.host}:${options.port}: the address is already in use`);
    if (code === 'EACCES' || code === 'EADDRNOTAVAIL') fail(`cannot listen on ${options.host}:${options.port}: ${(err as Error).message}`);
    throw err;
  }
  let signals = 0;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (++signals > 1) {
      log.warn({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    log.info({ signal }, 'shutting down: draining in-flight requests');
    running.stop().then(
      () => {
        log.info('stopped');
        log.flush();
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

async function main(argv: string[]): Promise<void> {
  const [system, command, ...rest] = argv;
  if (system === undefined || system === '--help' || system === '-h' || system === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  try {
    if (system === 'vmcp' && command === 'serve') return await vmcpServe(parseOptions(rest));
    if (system === 'vmcp' && command === 'validate') return await vmcpValidate(parseOptions(rest));
    throw new UsageError(`unknown command "${[system, command].filter(Boolean).join(' ')}"`);
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      fail(`gatehouse: ${(err as Error).message}\n\n${USAGE}`, 2);
    }
    throw err;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`gatehouse: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
