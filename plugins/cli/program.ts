/**
 * The `gatehouse` command tree (commander): every command and subcommand answers `--help`, the
 * root `--version`; an unknown command or option is answered with a did-you-mean and the usage.
 * Actions are in each system's commands module, imported when a command runs: `--help` and
 * `--version` then answer at once instead of after loading both servers.
 */
import { Command } from 'commander';
import { benchCommand } from './bench/program.ts';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.ts';
import { configOption, serveOptions, watchConfigOption, type ServeOptions, type ValidateOptions } from './options.ts';
import { VERSION } from './version.ts';

const VMCP_PORT = 4483;
const REGISTRY_PORT = 8080;

const VMCP_CONFIG = 'multi-document YAML of MCPGroup, MCPServer, VirtualMCPServer, MCPExternalAuthConfig and Secret resources';
const REGISTRY_CONFIG = 'one YAML document with auth, sources, registries and database';

const EXIT_CODES = `
Exit codes:
  ${EXIT_OK}  done (validate: the file is good; serve: stopped by SIGTERM or SIGINT after draining)
  ${EXIT_FAILURE}  could not start or failed while running (address in use, credential file missing,
     database unreachable, failed shutdown, a second stop signal)
  ${EXIT_USAGE}  the command line or the configuration is wrong; nothing was started`;

const STOP_SIGNALS = `
Signals:
  SIGTERM, SIGINT  drain in-flight requests and stop (a second one exits at once with ${EXIT_FAILURE})`;
const VMCP_SIGNALS = `${STOP_SIGNALS}
  SIGHUP           re-read the configuration and apply it (backends, auth, plugins); a file with
                   problems, or a change that needs a restart, is refused and logged, and the
                   running configuration keeps serving`;
const REGISTRY_SIGNALS = `${STOP_SIGNALS}
  SIGHUP           re-read the configuration and apply its sources, registries and Secrets; a file
                   with problems, or a change that needs a restart (database, server, sync, auth),
                   is refused and logged, and the running configuration keeps serving`;

type Action<O> = (options: O) => Promise<void>;

function system(name: string, description: string, configWhat: string, port: number, serve: Action<ServeOptions>, validate: Action<ValidateOptions>, signals: string): Command {
  const command = new Command(name).description(description);
  const serveCommand = command
    .command('serve')
    .description(`start ${description} and run until stopped`)
    .addOption(configOption(configWhat));
  for (const option of serveOptions(port)) serveCommand.addOption(option);
  serveCommand.addOption(watchConfigOption());
  serveCommand.addHelpText('after', `${signals}\n${EXIT_CODES}`).action(serve);
  command
    .command('validate')
    .description('check a configuration file and print every problem with its line and YAML path')
    .addOption(configOption(configWhat))
    .addHelpText('after', EXIT_CODES)
    .action(validate);
  return command;
}

export function buildProgram(): Command {
  const program = new Command('gatehouse')
    .description('A gateway for the Model Context Protocol: a virtual MCP server in front of MCP backends, and an MCP registry server.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .addHelpText('after', `${EXIT_CODES}\n\nRun "gatehouse <command> <subcommand> --help" for a command's options.`);
  const vmcp = (): Promise<typeof import('./vmcp-commands.ts')> => import('./vmcp-commands.ts');
  const registry = (): Promise<typeof import('./registry-commands.ts')> => import('./registry-commands.ts');
  program.addCommand(
    system('vmcp', 'the virtual MCP server', VMCP_CONFIG, VMCP_PORT, async (o) => (await vmcp()).vmcpServe(o), async (o) => (await vmcp()).vmcpValidate(o), VMCP_SIGNALS),
  );
  program.addCommand(
    system('registry', 'the MCP registry server', REGISTRY_CONFIG, REGISTRY_PORT, async (o) => (await registry()).registryServe(o), async (o) => (await registry()).registryValidate(o), REGISTRY_SIGNALS),
  );
  program.addCommand(benchCommand());
  everyCommand(program, (command) => {
    command
      // The caller maps commander's outcomes to the exit codes above instead of commander exiting 1.
      .exitOverride()
      // After an error, its usage line and where the rest is: the whole help would bury the error.
      .showHelpAfterError(`${usageLine(command)}\nRun "${commandPath(command)} --help" for ${command.commands.length > 0 ? 'its commands and options' : 'its options'}.`);
    unknownOptionsFirst(command);
  });
  return program;
}

/**
 * commander checks that mandatory options are there before it looks for unknown ones, so
 * `gatehouse vmcp validate --confg x` was told "required option '-c, --config <FILE>' not
 * specified", without a word about the misspelling. A command's mandatory options are checked
 * instead just before its action, which commander runs after the unknown-option check (with its
 * did-you-mean): the same message, code and exit status, in the order that names the cause.
 */
function unknownOptionsFirst(command: Command): void {
  const mandatory = command.options.filter((option) => option.mandatory);
  if (mandatory.length === 0) return;
  for (const option of mandatory) option.makeOptionMandatory(false);
  command.hook('preAction', (self) => {
    for (const option of mandatory) {
      if (self.getOptionValue(option.attributeName()) === undefined) self.error(`error: required option '${option.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
    }
  });
}

/** `gatehouse vmcp serve`. */
function commandPath(command: Command): string {
  return command.parent === null ? command.name() : `${commandPath(command.parent)} ${command.name()}`;
}

function usageLine(command: Command): string {
  return `Usage: ${commandPath(command)} ${command.usage()}`;
}

function everyCommand(command: Command, apply: (command: Command) => void): void {
  apply(command);
  for (const sub of command.commands) everyCommand(sub, apply);
}
