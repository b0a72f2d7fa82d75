/**
 * `gatehouse vmcp serve|validate`.
 */
import process from 'node:process';
import { startVmcp } from '@gatehouse-mcp/gateway';
import { validateVmcp, VmcpBuiltins } from './vmcp-builtins.ts';
import type { ServeOptions, ValidateOptions } from './options.ts';
import { fileReload } from './reload.ts';
import { loadConfig, serve } from './serve.ts';
import { vmcpWorkerWarnings } from './workers/vmcp-warnings.ts';

export async function vmcpValidate(options: ValidateOptions): Promise<void> {
  const config = await loadConfig(options, validateVmcp);
  const count = config.backends.length;
  // The registry is not read: validate checks the file alone, whether or not the registry is up.
  const fed = config.registry === null ? '' : ` and the servers of registry "${config.registry.name}" at ${config.registry.url}`;
  process.stdout.write(`${options.config}: OK (VirtualMCPServer/${config.name}, group "${config.groupRef}" with ${count} backend${count === 1 ? '' : 's'}${fed})\n`);
}

export function vmcpServe(options: ServeOptions): Promise<void> {
  return serve(
    options,
    validateVmcp,
    async (config, log, worker) => {
      const builtins = new VmcpBuiltins();
      const running = await startVmcp({ config, host: options.host, port: options.port, log, ...worker, builtins: builtins.for(config) });
      return {
        url: running.url,
        stop: () => running.stop(),
        reload: fileReload(
          options.config,
          validateVmcp,
          async (next) => {
            const outcome = await running.reload(next, builtins.for(next));
            if (outcome.status === 'applied') builtins.served(next);
            return outcome;
          },
          log,
        ),
      };
    },
    true,
    vmcpWorkerWarnings,
  );
}
