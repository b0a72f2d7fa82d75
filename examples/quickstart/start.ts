/**
 * `npm start`: the demo backend(s) of examples/quickstart/vmcp.yaml, then Gatehouse in front of
 * them on 127.0.0.1:4483 (the stdio backend is the gateway's to start). Ctrl-C stops everything.
 */
import { fileURLToPath } from 'node:url';
import { exitOnStartFailure, exitWith } from '../../plugins/cli/start-failure.ts';
import { stopOnSignals } from '../../plugins/cli/signals.ts';
import { createLogger, formatProblems, startVmcp, validateVmcpFile } from '@gatehouse-mcp/gateway';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { startDemoServer } from './demo-server.ts';

const file = process.env.GATEHOUSE_QUICKSTART_CONFIG ?? fileURLToPath(new URL('./vmcp.yaml', import.meta.url));
const result = await validateVmcpFile(file);
if (!result.ok) exitWith(formatProblems(result.problems));
const config = result.config;
const log = createLogger(process.env.LOG_LEVEL === undefined ? 'info' : (process.env.LOG_LEVEL as 'info'));

const demos: { close(): Promise<void> }[] = [];
for (const backend of config.backends) {
  // A stdio server is started by the gateway itself, per session.
  if (backend.transport.kind !== 'streamable-http') continue;
  const url = new URL(backend.url);
  try {
    demos.push(await startDemoServer(backend.name, Number(url.port)));
  } catch (err) {
    exitOnStartFailure(err, { host: url.hostname, port: Number(url.port) });
  }
  log.info({ backend: backend.name, url: backend.url }, 'demo MCP server started');
}

const port = Number(new URL(config.incomingAuth.resourceUrl ?? 'http://127.0.0.1:4483/mcp').port);
let gateway;
try {
  gateway = await startVmcp({ config, host: '127.0.0.1', port, log, builtins: vmcpBuiltins(config) });
} catch (err) {
  exitOnStartFailure(err, { host: '127.0.0.1', port });
}
process.stdout.write(`\nGatehouse is ready: point an MCP client at ${gateway.url}\n  e.g. npx @modelcontextprotocol/inspector --cli ${gateway.url} --transport http --method tools/list\n\n`);
stopOnSignals(async () => {
  await gateway.stop();
  for (const demo of demos) await demo.close();
}, log);
