/**
 * The `gatehouse` command line. Each system's commands live in their own module; this file only
 * dispatches and prints usage.
 */
import { UsageError, exitWith } from './args.ts';
import { VMCP_USAGE, vmcpServe, vmcpValidate } from './vmcp-commands.ts';
import { REGISTRY_USAGE, registryServe, registryValidate } from './registry-commands.ts';

type Command = (args: string[]) => Promise<void>;

const COMMANDS: Record<string, Command> = {
  'vmcp serve': vmcpServe,
  'vmcp validate': vmcpValidate,
  'registry serve': registryServe,
  'registry validate': registryValidate,
};

const USAGE = `Usage:
${VMCP_USAGE}
${REGISTRY_USAGE}

Options:
  --config FILE      the configuration file (vmcp: multi-document YAML of MCPGroup, MCPServer,
                     VirtualMCPServer, MCPExternalAuthConfig and Secret resources; registry: one YAML
                     document with auth, sources, registries and database)
  --host ADDRESS     address to listen on (default 127.0.0.1)
  --port PORT        port to listen on (0 picks a free one)
  --log-level LEVEL  fatal, error, warn, info, debug, trace or silent (default info)
`;

async function main(argv: string[]): Promise<void> {
  const [system, command, ...rest] = argv;
  if (system === undefined || system === '--help' || system === '-h' || system === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  const run = COMMANDS[`${system} ${command ?? ''}`];
  try {
    if (run === undefined) throw new UsageError(`unknown command "${[system, command].filter(Boolean).join(' ')}"`);
    await run(rest);
  } catch (err) {
    if (err instanceof UsageError || String((err as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
      exitWith(`gatehouse: ${(err as Error).message}\n\n${USAGE}`, 2);
    }
    throw err;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`gatehouse: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
