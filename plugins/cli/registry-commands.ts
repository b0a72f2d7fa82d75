/**
 * `gatehouse registry serve|validate`.
 */
import process from 'node:process';
import { validateRegistryFile } from '../registry/config/registry-config.ts';
import { authzModeOf, startRegistry } from '../registry/registry-server.ts';
import type { ServeOptions, ValidateOptions } from './options.ts';
import { fileReload } from './reload.ts';
import { loadConfig, serve } from './serve.ts';

const MODE_LABEL = { anonymous: 'anonymous mode', authOnly: 'auth-only mode', full: 'full authorization' } as const;

export async function registryValidate(options: ValidateOptions): Promise<void> {
  const config = await loadConfig(options, validateRegistryFile);
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  process.stdout.write(
    `${options.config}: OK (${MODE_LABEL[authzModeOf(config)]}, ${plural(config.sources.length, 'source')}, ${config.registries.length} registr${config.registries.length === 1 ? 'y' : 'ies'}, database ${config.database.type})\n`,
  );
}

export function registryServe(options: ServeOptions): Promise<void> {
  return serve(
    options,
    validateRegistryFile,
    async (config, log, worker) => {
      const running = await startRegistry({ config, host: options.host, port: options.port, log, ...worker });
      return { url: running.url, stop: () => running.stop(), reload: fileReload(options.config, validateRegistryFile, (next) => running.reload(next), log) };
    },
    true,
  );
}
