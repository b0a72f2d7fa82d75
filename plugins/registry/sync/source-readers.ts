/**
 * The reader of each source kind, built from the source's definition and the server's sync
 * settings. Secrets are resolved here, when a reader is made, from the config file's Secret
 * documents (only references are stored). What the admin API created is held to the `sync`
 * settings: private addresses only when allowed, file paths only under `sync.fileRoot`.
 */
import type { Logger } from 'pino';
import type { SecretStore } from '@gatehouse-mcp/gateway';
import type { SecretRef, SyncSettings } from '../config/registry-config.ts';
import type { SourceRecord } from '../store/records.ts';
import { createApiReader } from './api-source.ts';
import { createClusterReader } from './cluster-reader.ts';
import { createFileReader } from './file-source.ts';
import { createGitReader } from './git-source.ts';
import type { SourceReader } from './source-reader.ts';
import { SyncFailure } from './source-reader.ts';
import type { ReaderFactory } from './scheduler.ts';

export interface ReaderContext {
  readonly settings: SyncSettings;
  readonly secrets: SecretStore;
  readonly log?: Logger;
}

/** The value of a secret reference, or a failure naming what is missing (never the value). */
export function secretValue(secrets: SecretStore, ref: SecretRef, where: string): string {
  const lookup = secrets.resolve(ref);
  if (lookup.found) return lookup.value;
  throw new SyncFailure(`${where}: ${lookup.problem ?? `the value of Secret ${JSON.stringify(ref.name)} key ${JSON.stringify(ref.key)} is not valid`}`);
}

export function sourceReaders(context: ReaderContext): ReaderFactory {
  /** The operator's own sources reach what they name; the API's only public addresses, unless allowed. */
  const trusted = (source: SourceRecord): boolean => source.origin === 'config' || context.settings.allowPrivateAddresses;
  return (source: SourceRecord): SourceReader => {
    switch (source.kind) {
      case 'file': {
        if (source.origin === 'config') return createFileReader(source.file!.path);
        // What the API created reads under sync.fileRoot only, checked again at every read.
        const root = context.settings.fileRoot;
        if (root === null) throw new SyncFailure('file sources created through the API read under sync.fileRoot, and the configuration names none now');
        return createFileReader(source.file!.path, { root });
      }
      case 'api': {
        const api = source.api!;
        const token = api.tokenSecretRef === null ? null : secretValue(context.secrets, api.tokenSecretRef, 'api.tokenSecretRef');
        return createApiReader({ url: api.url, token }, { allowPrivateAddresses: trusted(source) });
      }
      case 'git': {
        const git = source.git!;
        const credentials =
          git.auth === null ? null : { username: git.auth.username ?? 'git', password: secretValue(context.secrets, git.auth.passwordSecretRef, 'git.auth.passwordSecretRef') };
        return createGitReader(
          { repository: git.repository, branch: git.branch, path: git.path, credentials },
          // What the API created speaks https only (http too where private addresses are allowed),
          // and otherwise reaches public addresses only (git's connections pinned to the ones checked).
          {
            protocols: source.origin === 'config' ? undefined : context.settings.allowPrivateAddresses ? ['https', 'http'] : ['https'],
            allowPrivateAddresses: trusted(source),
          },
        );
      }
      case 'cluster':
        return createClusterReader(source.cluster!, { log: context.log?.child({ source: source.name }) ?? null });
      default:
        throw new SyncFailure(`${source.kind} sources are not available in this build yet`);
    }
  };
}
