/**
 * Several identity providers (`auth.oauth.providers[]`) behind one validator: the token's `iss`
 * picks the provider, whose validator then verifies everything (signature, issuer, audience,
 * expiry). The payload is decoded without trust only to choose; a token naming no configured
 * issuer is refused.
 */
import { decodeJwt } from 'jose';
import type { Logger } from 'pino';
import { GatewayError, untrusted } from '@gatehouse-mcp/gateway';
import type { OAuthProviderConfig } from '../config/registry-config.ts';
import type { TokenValidator, TokenValidatorOptions, VerifiedToken } from '../../incoming-auth/contract.ts';

export type ValidatorFactory = (options: TokenValidatorOptions, log: Logger) => Promise<TokenValidator>;

interface ProviderValidator {
  readonly issuer: string;
  readonly validator: TokenValidator;
}

function issuerOf(token: string): string | null {
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === 'string' ? iss : null;
  } catch {
    return null;
  }
}

export class IssuerValidators implements TokenValidator {
  readonly #providers: readonly ProviderValidator[];
  readonly #byIssuer: ReadonlyMap<string, TokenValidator>;

  private constructor(providers: readonly ProviderValidator[]) {
    this.#providers = providers;
    this.#byIssuer = new Map(providers.map((p) => [p.issuer, p.validator]));
  }

  static async create(providers: readonly OAuthProviderConfig[], create: ValidatorFactory, log: Logger): Promise<IssuerValidators> {
    const validators: ProviderValidator[] = [];
    for (const provider of providers) {
      const validator = await create({ issuer: provider.issuerUrl, audience: provider.audience, allowPrivateIp: provider.allowPrivateIp }, log.child({ provider: provider.name }));
      validators.push({ issuer: provider.issuerUrl, validator });
    }
    return new IssuerValidators(validators);
  }

  verify(token: string): VerifiedToken | Promise<VerifiedToken> {
    // One provider: its validator handles everything, opaque tokens included.
    if (this.#providers.length === 1) return this.#providers[0]!.validator.verify(token);
    const iss = issuerOf(token);
    if (iss === null) throw new GatewayError('invalid_token', 'the token is not a JWT with an iss claim, so no configured provider can be chosen to verify it');
    const validator = this.#byIssuer.get(iss) ?? this.#byIssuer.get(iss.replace(/\/+$/, '')) ?? this.#byIssuer.get(`${iss}/`);
    if (validator === undefined) throw new GatewayError('invalid_token', `the token's issuer ${untrusted(iss, 128)} is not one of the configured providers`);
    return validator.verify(token);
  }

  async warm(): Promise<void> {
    await Promise.all(this.#providers.map((p) => p.validator.warm()));
  }

  close(): void {
    for (const p of this.#providers) p.validator.close();
  }
}
