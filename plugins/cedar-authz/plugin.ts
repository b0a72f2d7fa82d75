/**
 * The `cedar-authz` plugin: ToolHive's Cedar authorization of a virtual MCP server's tools,
 * prompts and resources, as a view of the gateway (view.ts). Made by the composition root from
 * `spec.incomingAuth.authzConfig` (plugins/cli/vmcp-builtins.ts), after incoming auth and the
 * claims filter: a caller sees an item when both let it.
 */
import { definePlugin, PluginConfigError, type AuthzPolicyConfig } from '@gatehouse-mcp/gateway';
import { listPolicies } from './checks.ts';
import { settingsOf } from './config.ts';
import { createCedarAuthorizer } from './engine.ts';
import { policiesAsJson, policyId } from './policies.ts';
import { cedarView } from './view.ts';

export interface CedarAuthzPluginConfig {
  /** `spec.incomingAuth.authzConfig`, resolved. */
  readonly authz: AuthzPolicyConfig;
  /** The VirtualMCPServer's name: the `MCP::"<name>"` parent of every resource, as ToolHive's vMCP names it. */
  readonly serverName: string;
  /** incomingAuth is anonymous: every caller is ToolHive's anonymous principal, `Client::"anonymous"`. */
  readonly anonymous: boolean;
  /** Decisions kept (engine.ts); default 10,000. */
  readonly cacheSize?: number;
}

export const cedarAuthz = definePlugin<CedarAuthzPluginConfig>({
  name: 'cedar-authz',
  create(config, host) {
    const log = host.log;
    let authorizer: ReturnType<typeof createCedarAuthorizer>;
    try {
      authorizer = createCedarAuthorizer(settingsOf(config.authz, config.serverName), {
        ...(config.cacheSize === undefined ? {} : { cacheSize: config.cacheSize }),
        // An evaluation error denies (as in ToolHive); the decision is cached, so this is said once per key.
        onError: (reason) => log.debug({ reason }, 'cedar-authz: a policy failed to evaluate: the request is denied'),
      });
    } catch (err) {
      throw new PluginConfigError([`${config.authz.source}: ${err instanceof Error ? err.message : String(err)}`]);
    }
    const listing = listPolicies(policiesAsJson(config.authz.policies)).map(policyId);
    return {
      name: 'cedar-authz',
      view: cedarView(authorizer, { anonymous: config.anonymous }),
      start() {
        log.info({ policies: config.authz.policies.length, source: config.authz.source, arguments: authorizer.referencesArguments }, 'cedar-authz: tools, prompts and resources are authorized by Cedar policies (default deny)');
        if (config.anonymous) {
          log.warn('cedar-authz: incomingAuth is anonymous: the policies decide for every caller as Client::"anonymous" (ToolHive\'s anonymous principal)');
        }
        if (listing.length > 0) {
          log.warn({ policies: listing }, 'cedar-authz: these policies name a list action (list_tools, list_prompts, list_resources) or FeatureType, which no request of a virtual MCP server has: lists are filtered per item by call_tool, get_prompt and read_resource, as in ToolHive');
        }
      },
    };
  },
});
