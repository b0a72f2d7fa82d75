/**
 * `oidcConfig.type: cluster`: the Kubernetes API server is the issuer of the service-account
 * tokens callers present. Its discovery document and JWKS (`/.well-known/openid-configuration`,
 * `/openid/v1/jwks`) are fetched from the API server with the pod's own service-account
 * credentials: the cluster CA bundle (trusted for that connection) and the service-account token
 * (sent as the bearer of those fetches, never to any other host).
 *
 * Where the credentials come from, for tests and running outside a pod:
 *   GATEHOUSE_SERVICEACCOUNT_DIR   directory holding `ca.crt` and `token`
 *                                  (default /var/run/secrets/kubernetes.io/serviceaccount)
 *   GATEHOUSE_K8S_CA_FILE          the CA bundle file, overriding the directory's
 *   GATEHOUSE_K8S_TOKEN_FILE       the token file, overriding the directory's
 * The issuer (the API server URL) comes from the config (default https://kubernetes.default.svc).
 *
 * The `iss` tokens carry is auto-detected from the API server's discovery document: clusters
 * often issue as `https://kubernetes.default.svc.cluster.local` or a public OIDC URL while being
 * reached at `https://kubernetes.default.svc`. The keys are always fetched from the API server
 * itself, whatever `jwks_uri` the document names.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { type ClusterOidcConfig, StartupError } from '@gatehouse-mcp/gateway';
import type { TokenValidatorOptions } from './contract.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Projected service-account tokens rotate (the kubelet rewrites the file): re-read at most this often. */
const TOKEN_REREAD_MS = 60_000;

export interface ClusterCredentialFiles {
  readonly caFile: string;
  readonly tokenFile: string;
}

export function clusterCredentialFiles(env: NodeJS.ProcessEnv = process.env): ClusterCredentialFiles {
  const dir = env['GATEHOUSE_SERVICEACCOUNT_DIR'] || SERVICE_ACCOUNT_DIR;
  return {
    caFile: env['GATEHOUSE_K8S_CA_FILE'] || join(dir, 'ca.crt'),
    tokenFile: env['GATEHOUSE_K8S_TOKEN_FILE'] || join(dir, 'token'),
  };
}

/** The pod's service-account CA or token cannot be read (the message says which file, and why). */
export class ClusterCredentialsError extends StartupError {}

function readCredential(file: string, what: string): string {
  try {
    const text = readFileSync(file, 'utf8').trim();
    if (text === '') throw new Error('the file is empty');
    return text;
  } catch (err) {
    throw new ClusterCredentialsError(
      `incomingAuth oidcConfig type cluster needs the pod's service-account ${what}: cannot read ${file} (${(err as Error).message}). ` +
        'Outside a pod, set GATEHOUSE_SERVICEACCOUNT_DIR (or GATEHOUSE_K8S_CA_FILE / GATEHOUSE_K8S_TOKEN_FILE).',
    );
  }
}

/** The service-account token, re-read from its file when older than a minute (a read failure keeps the last one). */
function rotatingToken(file: string, now: () => number = Date.now): () => string {
  let token = readCredential(file, 'token');
  let readAt = now();
  return () => {
    if (now() - readAt >= TOKEN_REREAD_MS) {
      readAt = now();
      try {
        token = readCredential(file, 'token');
      } catch {
        // keep the last token; the API server answers 401 if it really expired
      }
    }
    return token;
  };
}

/** Validator options for the cluster issuer. Throws ClusterCredentialsError when the mount is missing. */
export function clusterValidatorOptions(config: ClusterOidcConfig, files: ClusterCredentialFiles = clusterCredentialFiles()): TokenValidatorOptions {
  const ca = readCredential(files.caFile, 'CA bundle');
  const issuer = config.issuer.replace(/\/+$/, '');
  return {
    issuer,
    audience: config.audience,
    allowPrivateIp: true,
    ca,
    fetchBearerToken: rotatingToken(files.tokenFile),
    jwksUri: `${issuer}/openid/v1/jwks`,
    issuerFromDiscovery: true,
  };
}
