/**
 * `npm run start:auth`: the demo identity provider and the `whoami` backends of
 * examples/embedded-auth/vmcp.yaml, then Gatehouse with its embedded authorization server in
 * front of them. Everything listens on 127.0.0.1; the ports come from the config. Ctrl-C stops
 * everything.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, formatProblems, startVmcp, validateVmcpFile } from '@gatehouse-mcp/gateway';
import { exitOnStartFailure, exitWith } from '../../plugins/cli/start-failure.ts';
import { stopOnSignals } from '../../plugins/cli/signals.ts';
import { vmcpBuiltins } from '../../plugins/cli/vmcp-builtins.ts';
import { startDemoIdp } from './demo-idp.ts';
import { startWhoamiServer } from './whoami-server.ts';

const file = process.env.GATEHOUSE_EXAMPLE_CONFIG ?? fileURLToPath(new URL('./vmcp.yaml', import.meta.url));
const result = await validateVmcpFile(file);
if (!result.ok) exitWith(formatProblems(result.problems));
const config = result.config;
const log = createLogger(process.env.LOG_LEVEL === undefined ? 'info' : (process.env.LOG_LEVEL as 'info'));

const provider = config.authServer?.upstreamProviders[0];
if (provider?.type !== 'oidc') exitWith(`${file}: the example expects authServerConfig.upstreamProviders[0] to be the demo IdP (type oidc)`);
const exchange = config.backends.map((b) => b.externalAuth).find((auth) => auth?.type === 'tokenExchange');
const idpUrl = new URL(provider.issuerUrl);
const gatewayUrl = new URL(config.incomingAuth.resourceUrl ?? '');
const stops: (() => Promise<void>)[] = [];

let idp;
try {
  idp = await startDemoIdp({
    port: Number(idpUrl.port),
    redirectUri: `${config.authServer!.issuer}/oauth/callback`,
    loginClientSecret: provider.clientSecret?.value ?? '',
    exchangeClientSecret: exchange?.type === 'tokenExchange' ? (exchange.clientSecret?.value ?? '') : '',
  });
} catch (err) {
  exitOnStartFailure(err, { host: idpUrl.hostname, port: Number(idpUrl.port) });
}
stops.push(() => idp.close());
log.info({ issuer: idp.issuer }, 'demo identity provider started');

for (const backend of config.backends) {
  const url = new URL(backend.url);
  try {
    const server = await startWhoamiServer(backend.name, Number(url.port), `${idp.issuer}/me`);
    stops.push(() => server.close());
  } catch (err) {
    exitOnStartFailure(err, { host: url.hostname, port: Number(url.port) });
  }
  log.info({ backend: backend.name, url: backend.url, credential: backend.externalAuth?.type ?? 'none' }, 'whoami MCP server started');
}

let gateway;
try {
  gateway = await startVmcp({ config, host: '127.0.0.1', port: Number(gatewayUrl.port), log, builtins: vmcpBuiltins(config) });
} catch (err) {
  exitOnStartFailure(err, { host: '127.0.0.1', port: Number(gatewayUrl.port) });
}
stops.unshift(() => gateway.stop());
process.stdout.write(
  `\nGatehouse is ready at ${gateway.url}, with its authorization server at ${config.authServer!.issuer}\n` +
    `  npx @modelcontextprotocol/inspector     then connect to ${gateway.url} (Streamable HTTP): log in with any name,\n` +
    `  allow the client, and call profile_whoami, reports_whoami and plain_whoami.\n\n`,
);
stopOnSignals(async () => {
  for (const stop of stops) await stop();
}, log);
