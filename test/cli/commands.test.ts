/**
 * The command line as a user meets it: `--help` on every command and subcommand, `--version`,
 * a did-you-mean and the usage for a wrong command or option, and the documented exit codes
 * (0 done, 1 failed to start or while running, 2 wrong command line or configuration).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../fixtures/processes.ts';
import { commandAt, commandPaths, runCli as run } from '../helpers/cli.ts';
import { vmcpYaml, writeConfig } from '../helpers/gateway.ts';

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** `line:column` (1-based) of the first occurrence of `text` in `file`. */
function positionOf(file: string, text: string): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  const index = lines.findIndex((line) => line.includes(text));
  assert.ok(index >= 0, `${text} is in ${file}`);
  return `${index + 1}:${lines[index]!.indexOf(text) + 1}`;
}

describe('gatehouse --help', () => {
  it('the root lists the systems, the exit codes and how to get more', async () => {
    for (const args of [['--help'], ['-h'], ['help']]) {
      const result = await run(args);
      assert.equal(result.code, 0, args.join(' '));
      assert.equal(result.stderr, '');
      assert.match(result.stdout, /^Usage: gatehouse \[options\] \[command\]/);
      assert.match(result.stdout, /vmcp +the virtual MCP server/);
      assert.match(result.stdout, /registry +the MCP registry server/);
      assert.match(result.stdout, /Exit codes:\n {2}0 .*\n {2}1 .*\n(.*\n)? {2}2 {2}the command line or the configuration is wrong/);
    }
  });

  it('each system lists its subcommands', async () => {
    for (const system of ['vmcp', 'registry']) {
      for (const args of [[system, '--help'], ['help', system]]) {
        const result = await run(args);
        assert.equal(result.code, 0, args.join(' '));
        assert.match(result.stdout, new RegExp(`^Usage: gatehouse ${system} \\[options\\] \\[command\\]`));
        assert.match(result.stdout, /serve \[options\] +start the/);
        assert.match(result.stdout, /validate \[options\] +check a configuration file/);
      }
    }
  });

  it('serve lists every option with its default, its environment variable, the signals and the exit codes', async () => {
    for (const [system, port] of [['vmcp', 4483], ['registry', 8080]] as const) {
      for (const args of [[system, 'serve', '--help'], [system, 'help', 'serve']]) {
        const result = await run(args);
        assert.equal(result.code, 0, args.join(' '));
        const help = result.stdout.replace(/\n +/g, ' ');
        assert.match(help, new RegExp(`^Usage: gatehouse ${system} serve \\[options\\]`));
        assert.match(help, /-c, --config <FILE>/);
        assert.match(help, /--host <ADDRESS> .*\(default: "127\.0\.0\.1"\)/);
        assert.match(help, new RegExp(`--port <PORT> .*\\(default: ${port}\\)`));
        assert.match(help, /--log-level <LEVEL> .*default: "info", env: GATEHOUSE_LOG_LEVEL\)/);
        assert.match(help, /--log-format <FORMAT> .*pretty when stdout is a terminal, json otherwise \(choices: "json", "pretty", env: GATEHOUSE_LOG_FORMAT\)/);
        assert.match(help, /--watch-config +reload the configuration when its file changes/);
        if (system === 'vmcp') assert.match(help, /SIGHUP +re-read the configuration and apply it \(backends, auth, plugins\)/);
        else assert.match(help, /SIGHUP +re-read the configuration and apply its sources, registries and Secrets/);
        assert.match(help, /Exit codes:/);
      }
    }
  });

  it('validate takes only --config', async () => {
    const result = await run(['registry', 'validate', '--help']);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^Usage: gatehouse registry validate \[options\]/);
    assert.match(result.stdout, /-c, --config <FILE> +one YAML document with auth, sources, registries/);
    assert.doesNotMatch(result.stdout, /--port/);
  });
});

describe('gatehouse --version', () => {
  it('prints the version in package.json, from any command', async () => {
    for (const args of [['--version'], ['-V'], ['vmcp', 'serve', '--version']]) {
      const result = await run(args);
      assert.equal(result.code, 0, args.join(' '));
      assert.equal(result.stdout, `${VERSION}\n`);
    }
  });
});

describe('a wrong command line exits 2 with the problem, a did-you-mean and the usage', () => {
  const cases: { args: string[]; error: RegExp; usage: RegExp }[] = [
    { args: ['vmpc', 'serve'], error: /^error: unknown command 'vmpc'\n\(Did you mean vmcp\?\)\n/, usage: /Usage: gatehouse \[options\] \[command\]/ },
    { args: ['vmcp', 'serv'], error: /^error: unknown command 'serv'\n\(Did you mean serve\?\)\n/, usage: /Usage: gatehouse vmcp \[options\] \[command\]\nRun "gatehouse vmcp --help" for its commands and options\./ },
    { args: ['registry', 'validat'], error: /^error: unknown command 'validat'\n\(Did you mean validate\?\)\n/, usage: /Usage: gatehouse registry \[options\] \[command\]/ },
    { args: ['vmcp', 'serve', '-c', 'x.yaml', '--prot', '80'], error: /^error: unknown option '--prot'\n\(Did you mean --port\?\)\n/, usage: /Usage: gatehouse vmcp serve \[options\]\nRun "gatehouse vmcp serve --help" for its options\./ },
    { args: ['vmcp', 'validate', '--config', 'x.yaml', '--port', '1'], error: /^error: unknown option '--port'/, usage: /Usage: gatehouse vmcp validate \[options\]/ },
    { args: ['vmcp', 'validate'], error: /^error: required option '-c, --config <FILE>' not specified\n/, usage: /Usage: gatehouse vmcp validate \[options\]/ },
    { args: ['vmcp', 'validate', '-c', 'x.yaml', 'extra'], error: /^error: too many arguments for 'validate'/, usage: /Usage: gatehouse vmcp validate/ },
    { args: ['registry', 'serve', '-c', 'x.yaml', '--port', '70000'], error: /^error: option '--port <PORT>' argument '70000' is invalid\. It is not a port number \(0-65535; 0 picks a free one\)\n/, usage: /Usage: gatehouse registry serve/ },
    { args: ['vmcp', 'serve', '-c', 'x.yaml', '--log-level', 'verbose'], error: /argument 'verbose' is invalid\. Allowed choices are fatal, error, warn, info, debug, trace, silent\./, usage: /Usage: gatehouse vmcp serve/ },
    { args: ['vmcp', 'serve', '-c', 'x.yaml', '--log-format', 'xml'], error: /argument 'xml' is invalid\. Allowed choices are json, pretty\./, usage: /Usage: gatehouse vmcp serve/ },
  ];
  for (const { args, error, usage } of cases) {
    it(`gatehouse ${args.join(' ')}`, async () => {
      const result = await run(args);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, error);
      assert.match(result.stderr, usage);
    });
  }

  it('a command without its subcommand gets the command\'s help on stderr', async () => {
    for (const args of [[], ['vmcp']]) {
      const result = await run(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /^Usage: gatehouse/);
    }
  });
});

describe('a misspelled command or option of every command gets a did-you-mean', () => {
  /** `config` → `confg`: one letter less, near enough for a suggestion. */
  const misspell = (word: string): string => word.slice(0, -2) + word.slice(-1);

  const paths = commandPaths();
  it('covers every command', () => assert.ok(paths.length >= 8, paths.map((p) => p.join(' ')).join(', ')));
  for (const path of paths) {
    const command = commandAt(path);
    const options = command.options.filter((o) => o.long !== undefined);
    // --config where there is one: commander checked for a mandatory option before it looked for
    // unknown ones, so `validate --confg x` was told --config is missing, not that it is misspelled.
    const option = options.find((o) => o.long === '--config') ?? options[0];
    const long = option?.long ?? '--help';
    const name = long.slice(2);
    it(`gatehouse ${[...path, `--${misspell(name)}`].join(' ')} x`, async () => {
      const ended = await run([...path, `--${misspell(name)}`, 'x']);
      assert.equal(ended.code, 2, ended.stderr);
      assert.match(ended.stderr, new RegExp(`^error: unknown option '--${misspell(name)}'\\n\\(Did you mean ${long}\\?\\)\\n`));
    });
    const sub = command.commands[0];
    if (sub !== undefined) {
      it(`gatehouse ${[...path, misspell(sub.name())].join(' ')}`, async () => {
        const ended = await run([...path, misspell(sub.name())]);
        assert.equal(ended.code, 2, ended.stderr);
        assert.match(ended.stderr, new RegExp(`^error: unknown command '${misspell(sub.name())}'\\n\\(Did you mean ${sub.name()}\\?\\)\\n`));
      });
    }
  }
});

describe('exit codes of validate and serve', () => {
  it('0 for a good file', async () => {
    const result = await run(['vmcp', 'validate', '--config', join(REPO_ROOT, 'examples/quickstart/vmcp.yaml')]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /OK \(VirtualMCPServer\/quickstart/);
  });

  it('2 for a configuration with problems, or one that cannot be read (validate and serve alike)', async () => {
    const bad = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'not a url' }] }));
    for (const args of [
      ['vmcp', 'validate', '--config', bad],
      ['vmcp', 'serve', '--config', bad, '--port', '0'],
      ['vmcp', 'validate', '--config', '/nonexistent/vmcp.yaml'],
      ['registry', 'serve', '--config', '/nonexistent/registry.yaml', '--port', '0'],
    ]) {
      const result = await run(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.ok(result.stderr.startsWith(args[3]!), `the problem starts with the file: ${result.stderr}`);
      assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    }
  });

  it('2 for a plugin module that is not a plugin, at the line of its module: (validate and serve alike)', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }], spec: '  plugins: [{name: odd, module: ./not-a-plugin.mjs}]' }));
    await writeFile(join(dirname(file), 'not-a-plugin.mjs'), 'export const answer = 42;\n');
    const where = positionOf(file, './not-a-plugin.mjs');
    for (const command of ['validate', 'serve']) {
      const result = await run(['vmcp', command, '--config', file, ...(command === 'serve' ? ['--port', '0'] : [])]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, `${file}:${where} VirtualMCPServer/vmcp spec.plugins[0].module: module "${join(dirname(file), 'not-a-plugin.mjs')}" does not export a plugin (a default export made with definePlugin)\n`);
    }
  });

  it('2 from validate for a plugin config its schema refuses, and for a plugin module that cannot load, each at its line', async () => {
    const allowlist = join(REPO_ROOT, 'examples/plugins/tool-allowlist.ts');
    const file = await writeConfig(
      vmcpYaml({
        backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }],
        spec: `  plugins:\n    - name: allowlist\n      module: ${allowlist}\n      config: {allowed: [echo]}\n    - {name: esm, module: ./esm-plugin.ts}\n    - {name: broken, module: ./broken/plugin.ts}`,
      }),
    );
    // A .ts plugin written with import/export, in a folder whose package.json (none here) does not say "type": "module".
    await writeFile(join(dirname(file), 'esm-plugin.ts'), "export default { name: 'esm', create: () => ({ name: 'esm' }) };\n");
    await mkdir(join(dirname(file), 'broken'));
    await writeFile(join(dirname(file), 'broken', 'package.json'), '{"type": "module"}\n');
    await writeFile(join(dirname(file), 'broken', 'plugin.ts'), "export default {\n  name: 'broken',,\n};\n");
    const result = await run(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stdout, '');
    const problems = result.stderr.trimEnd().split('\n');
    assert.equal(problems.length, 4, result.stderr);
    assert.equal(problems[0], `${file}:${positionOf(file, 'config: {allowed')} VirtualMCPServer/vmcp spec.plugins[0].config.allow: is required`);
    assert.equal(problems[1], `${file}:${positionOf(file, 'allowed:')} VirtualMCPServer/vmcp spec.plugins[0].config: unknown field "allowed" (did you mean "allow"?)`);
    assert.match(problems[2]!, new RegExp(`^${file}:${positionOf(file, './esm-plugin.ts')} VirtualMCPServer/vmcp spec\\.plugins\\[1\\]\\.module: cannot load plugin module "\\S+esm-plugin\\.ts": .*\\(a plugin written with import/export in a \\.ts or \\.js file needs "type": "module" in the package\\.json of its folder\\)$`));
    assert.match(problems[3]!, new RegExp(`^${file}:${positionOf(file, './broken/plugin.ts')} VirtualMCPServer/vmcp spec\\.plugins\\[2\\]\\.module: cannot load plugin module "\\S+broken/plugin\\.ts": Transform failed with 1 error: \\S+plugin\\.ts:2:17: ERROR: `));
  });

  it('validate ends after its verdict when a plugin module leaves a timer open at its top level', async () => {
    const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }], spec: '  plugins: [{name: lingering, module: ./lingering.mjs}]' }));
    await writeFile(join(dirname(file), 'lingering.mjs'), "setInterval(() => {}, 1000);\nexport default { name: 'lingering', create: () => ({ name: 'lingering' }) };\n");
    const started = performance.now();
    const result = await run(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /: OK \(VirtualMCPServer\/vmcp/);
    // It used to print OK and then never exit (the test's own timeout ended it).
    assert.ok(performance.now() - started < 30_000, 'validate exited');
  });

  it('2 for a plugin module that names no file (a Node built-in, a data: URL), and a load failure stays one line', async () => {
    const file = await writeConfig(
      vmcpYaml({
        backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }],
        spec: '  plugins:\n    - {name: builtin, module: "node:fs"}\n    - {name: inline, module: "data:text/javascript,export default {name: 1}"}\n    - {name: noisy, module: ./noisy.mjs}',
      }),
    );
    // A module whose error message carries CR, LF and an escape sequence: it must not forge or colour a line of output.
    await writeFile(join(dirname(file), 'noisy.mjs'), 'throw new Error("first\\r\\nFAKE.yaml:1:1 forged\\u001b[31m red");\n');
    const result = await run(['vmcp', 'validate', '--config', file]);
    assert.equal(result.code, 2, result.stderr);
    const problems = result.stderr.trimEnd().split('\n');
    assert.equal(problems.length, 3, result.stderr);
    assert.match(problems[0]!, /spec\.plugins\[0\]\.module: cannot load plugin module "node:fs": it resolves to "node:fs", not a file: a plugin module is a path or the name of an installed package$/);
    assert.match(problems[1]!, /spec\.plugins\[1\]\.module: cannot load plugin module "data:text\/javascript,export default \{name: 1\}": it resolves to "data:text\/javascript,.*", not a file/);
    assert.match(problems[2]!, /spec\.plugins\[2\]\.module: cannot load plugin module "\S+noisy\.mjs": first FAKE\.yaml:1:1 forged \[31m red$/);
    assert.doesNotMatch(result.stderr, /[\r\x1b]/);
  });

  it('1 when it cannot start: the address is taken', async () => {
    const { createServer } = await import('node:net');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const file = await writeConfig(vmcpYaml({ backends: [{ name: 'echo', url: 'http://127.0.0.1:9/mcp' }] }));
      const result = await run(['vmcp', 'serve', '--config', file, '--port', String(port)]);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr, `cannot listen on 127.0.0.1:${port}: the address is already in use\n`);
    } finally {
      blocker.close();
    }
  });
});
