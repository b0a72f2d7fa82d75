/**
 * `gatehouse registry serve|validate --config FILE`.
 */
import { exitOnStartFailure, exitWith, parseCommandOptions, stopOnSignals } from './args.ts';
import { formatProblems } from '../../core/config/problems.ts';
import { validateRegistryFile } from '../registry/config/registry-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { authzModeOf, startRegistry } from '../registry/registry-server.ts';

export const REGISTRY_USAGE = `  gatehouse registry serve --config FILE [--host 127.0.0.1] [--port 8080] [--log-level info]
  gatehouse registry validate --config FILE`;

const MODE_LABEL = { anonymous: 'anonymous mode', authOnly: 'auth-only mode', full: 'full authorization' } as const;

export async function registryValidate(args: string[]): Promise<void> {
  const options = parseCommandOptions(args, 8080);
  const result = await validateRegistryFile(options.config);
  if (!result.ok) exitWith(formatProblems(result.problems));
  const { config } = result;
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  process.stdout.write(
    `${options.config}: OK (${MODE_LABEL[authzModeOf(config)]}, ${plural(config.sources.length, 'source')}, ${config.registries.length} registr${config.registries.length === 1 ? 'y' : 'ies'}, database ${config.database.type})\n`,
  );
}

export async function registryServe(args: string[]): Promise<void> {
  const options = parseCommandOptions(args, 8080);
  const result = await validateRegistryFile(options.config);
  if (!result.ok) exitWith(formatProblems(result.problems));
  const log = createLogger(options.logLevel);
  let running;
  try {
    running = await startRegistry({ config: result.config, host: options.host, port: options.port, log });
  } catch (err) {
    exitOnStartFailure(err, options);
  }
  stopOnSignals(() => running.stop(), log);
}
