// Minimal types for oidc-provider (it ships JS only): the parts the incoming-auth tests use.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ProviderClient {
    readonly clientId: string;
  }

  export interface ResourceServerInfo {
    scope: string;
    audience?: string;
    accessTokenTTL?: number;
    accessTokenFormat?: 'opaque' | 'jwt';
    jwt?: { sign?: { alg?: string } };
  }

  export interface ProviderConfiguration {
    clients?: Record<string, unknown>[];
    jwks?: { keys: Record<string, unknown>[] };
    scopes?: string[];
    features?: {
      devInteractions?: { enabled: boolean };
      clientCredentials?: { enabled: boolean };
      introspection?: { enabled: boolean };
      revocation?: { enabled: boolean };
      resourceIndicators?: {
        enabled: boolean;
        defaultResource?: (ctx: unknown, client: ProviderClient, oneOf?: string[]) => string | string[] | undefined | Promise<string | string[] | undefined>;
        useGrantedResource?: (ctx: unknown, model: unknown) => boolean | Promise<boolean>;
        getResourceServerInfo?: (ctx: unknown, resourceIndicator: string, client: ProviderClient) => ResourceServerInfo | Promise<ResourceServerInfo>;
      };
    };
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    readonly issuer: string;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
