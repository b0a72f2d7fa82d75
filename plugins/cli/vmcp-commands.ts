/**
 * `gatehouse vmcp serve|validate --config FILE`.
 */
import { formatProblems } from '../../core/config/problems.ts';
import { validateVmcpFile } from '../../core/config/vmcp-config.ts';
import { createLogger } from '../../core/observe/log.ts';
import { startVmcp } from '../../core/virtual-mcp-server.ts';
import { vmcpBuiltins } from './vmcp-builtins.ts';
import { exitOnStartFailure, exitWith, parseCommandOptions, stopOnSignals } from './args.ts';

export const VMCP_USAGE = `  gatehouse vmcp serve --config FILE [--host 127.0.0.1] [--port 4483] [--log-level info]
  gatehouse vmcp validate --config FILE`;

export async function vmcpValidate(args: string[]): Promise<void> {
  const options = parseCommandOptions(args, 4483);
  const result = await validateVmcpFile(options.config);
  if (!result.ok) exitWith(formatProblems(result.problems));
  const { config } = result;
  const count = config.backends.length;
  process.stdout.write(`${options.config}: OK (VirtualMCPServer/${config.name}, group "${config.groupRef}" with ${count} backend${count === 1 ? '' : 's'})\n`);
}

export async function vmcpServe(args: string[]): Promise<void> {
  const options = parseCommandOptions(args, 4483);
  const result = await validateVmcpFile(options.config);
  if (!result.ok) exitWith(formatProblems(result.problems));
  const log = createLogger(options.logLevel);
  let running;
  try {
    running = await startVmcp({ config: result.config, host: options.host, port: options.port, log, builtins: vmcpBuiltins(result.config) });
  } catch (err) {
    exitOnStartFailure(err, options);
  }
  stopOnSignals(() => running.stop(), log);
}
