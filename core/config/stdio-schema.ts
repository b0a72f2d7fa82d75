/**
 * The fields of an MCPServer that the gateway starts itself (`transport: stdio`): the command,
 * its arguments, environment and working directory, and how its processes are kept
 * (`spec.stdio`). A command comes only from here, the operator's file: never from a client or a
 * registry. The child's environment is what `env` says plus PATH and HOME, nothing inherited, so
 * a secret of the gateway's environment never reaches a server by accident; a secret the server
 * needs is named in `env` with `valueFrom.secretKeyRef`, as Kubernetes writes it.
 *
 *   spec:
 *     transport: stdio
 *     command: npx
 *     args: ["-y", "@modelcontextprotocol/server-everything"]
 *     env:
 *       - {name: LOG_LEVEL, value: debug}
 *       - name: GITHUB_TOKEN
 *         valueFrom: {secretKeyRef: {name: github, key: token}}
 *     cwd: /srv/data                 # relative paths: to the config file's directory
 *     stdio:
 *       shared: false                # true: one process for every session
 *       maxProcesses: 32
 *       idleTimeout: 10m
 *       startupTimeout: 60s
 *       stopGracePeriod: 5s
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { durationSchema as duration } from './duration.ts';
import { addIssue, q, text, uniqueNames } from './formats.ts';
import type { SchemaContext } from './schema-parts.ts';

/** A variable name a shell and every runtime accept. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Text that goes into argv or the environment of a process: a NUL would cut it short. */
const processText = z.string().refine((value) => !value.includes('\0'), 'must not contain a NUL character');

export const STDIO_DEFAULTS = { shared: false, maxProcesses: 32, idleTimeoutMs: 10 * 60_000, startupTimeoutMs: 60_000, stopGraceMs: 5_000 } as const;

export function stdioFields({ secretRef }: SchemaContext, configDir: string) {
  const envVar = z
    .strictObject({
      name: z.string().regex(ENV_NAME, 'must be a variable name: letters, digits and "_", not starting with a digit'),
      value: processText.optional(),
      valueFrom: z.strictObject({ secretKeyRef: secretRef }).optional(),
    })
    .superRefine((entry, ctx) => {
      if ((entry.value === undefined) === (entry.valueFrom === undefined)) addIssue(ctx, [], `env ${q(entry.name)} needs exactly one of value and valueFrom.secretKeyRef`, 'key');
      else if (entry.valueFrom?.secretKeyRef.value.includes('\0')) addIssue(ctx, ['valueFrom', 'secretKeyRef'], 'names a secret value with a NUL character, which no environment can hold');
    });

  // A name set twice is found even when another entry is invalid (a Secret not found, say).
  const env = uniqueNames('variable', z.array(envVar));

  const cwd = text.pipe(processText).transform((value, ctx) => {
    const path = isAbsolute(value) ? value : resolve(configDir, value);
    if (!existsSync(path) || !statSync(path).isDirectory()) ctx.issues.push({ code: 'custom', input: value, message: `is not a directory: ${path} (relative paths resolve against the directory of the config file)` });
    return path;
  });

  const stdio = z.strictObject({
    shared: z.boolean().default(STDIO_DEFAULTS.shared),
    maxProcesses: z.number().int().min(1).max(4096).default(STDIO_DEFAULTS.maxProcesses),
    idleTimeout: duration().default(STDIO_DEFAULTS.idleTimeoutMs),
    startupTimeout: duration().default(STDIO_DEFAULTS.startupTimeoutMs),
    stopGracePeriod: duration({ allowZero: true }).default(STDIO_DEFAULTS.stopGraceMs),
  });

  return {
    command: text.pipe(processText).optional(),
    args: z.array(processText).optional(),
    env: env.optional(),
    cwd: cwd.optional(),
    stdio: stdio.optional(),
  };
}

/** What an MCPServer spec holds of its transport, as the schema reads it. */
interface TransportSpec {
  readonly transport: 'streamable-http' | 'stdio' | 'sse';
  readonly url?: string | undefined;
  readonly command?: string | undefined;
  readonly args?: unknown;
  readonly env?: unknown;
  readonly cwd?: unknown;
  readonly stdio?: unknown;
  readonly externalAuthConfigRef?: unknown;
}

const STDIO_ONLY = ['command', 'args', 'env', 'cwd', 'stdio'] as const;

/** The fields each transport needs, and those it has no use for (a stdio field on an HTTP server is a mistake worth naming). */
export function transportFieldIssues(spec: TransportSpec, ctx: z.core.$RefinementCtx): void {
  if (spec.transport === 'stdio') {
    if (spec.command === undefined) addIssue(ctx, ['command'], 'is required with transport: stdio: the program the gateway starts, for example npx', 'key');
    if (spec.url !== undefined) addIssue(ctx, ['url'], 'is for HTTP servers: a stdio server is started from command (remove url, or set transport: streamable-http or sse)', 'key');
    if (spec.externalAuthConfigRef !== undefined) addIssue(ctx, ['externalAuthConfigRef'], 'outgoing credentials go on HTTP requests, and a stdio server gets none: give it its secrets in env with valueFrom.secretKeyRef', 'key');
    return;
  }
  if (spec.url === undefined) {
    addIssue(ctx, ['url'], `is required with transport: ${spec.transport}: the ${spec.transport === 'sse' ? 'SSE endpoint (the GET stream) of the backend, for example http://127.0.0.1:9100/sse' : 'MCP endpoint of the backend, for example http://127.0.0.1:9100/mcp'}`, 'key');
  }
  for (const field of STDIO_ONLY) {
    if (spec[field] !== undefined) addIssue(ctx, [field], `is for servers the gateway starts (transport: stdio), not for a ${spec.transport} server at a URL`, 'key');
  }
}
