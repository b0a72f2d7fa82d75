/**
 * The two tiers of the test suite. `npm test` runs every test file (after the type check);
 * `npm run test:unit` and `npm run test:e2e` split the same files between them.
 *
 * - unit: needs no service and finishes in seconds. No child process, no Redis, Sentinel or
 *   PostgreSQL, nothing past loopback (servers a test starts in its own process, on loopback,
 *   are fine), and a file takes a few seconds at most (about 4 s of CPU at most, most under 2 s,
 *   when measured on the 2-core CI machine; test:unit ran its 40 files in about a minute). The first part is checked: test/structure/tiers.test.ts reads a unit
 *   file and the test modules it imports, and test/unit-guard.ts fails a unit test that starts a
 *   process or connects past loopback or to a service while `test:unit` runs.
 * - e2e: the rest. Real processes (the `gatehouse` command, fixture servers in processes of their
 *   own, redis-server and Sentinel, nginx, git, the Python client), the services, and the suites
 *   that run in one process but take longer (gateways driven by SDK clients, property tests).
 *
 * An entry is a folder (`test/structure/`: every test file in it) or a test file. Every test file
 * is matched by exactly one entry of the two lists: test/structure/tiers.test.ts fails on a file
 * in neither list or in both, and on an entry that matches no file. A new test file goes in E2E
 * unless it meets the unit rule.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Tier = 'unit' | 'e2e';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));

export const UNIT: readonly string[] = [
  'test/aggregate/declarations.test.ts',
  'test/aggregate/ids.test.ts',
  'test/aggregate/naming.test.ts',
  'test/aggregate/record-for.test.ts',
  'test/aggregate/resume-tickets.test.ts',
  'test/aggregate/shared-declarations.test.ts',
  'test/aggregate/uri-template.test.ts',
  'test/audit/audit-output.test.ts',
  'test/bench/compare.test.ts',
  'test/bench/instruction-profile.test.ts',
  'test/bench/instructions.test.ts',
  'test/bench/profile.test.ts',
  'test/cedar-authz/',
  'test/claims-filter/',
  'test/config/',
  'test/core/answer-reader.test.ts',
  'test/core/address-class.test.ts',
  'test/core/app.test.ts',
  'test/core/channel-transport-attacks.test.ts',
  'test/core/chain.test.ts',
  'test/core/endpoint-guard.test.ts',
  'test/core/header-list.test.ts',
  'test/core/header-value-checks.test.ts',
  'test/core/hop-mark.test.ts',
  'test/core/jsonrpc.test.ts',
  'test/core/lazy-emitter.test.ts',
  'test/core/methods.test.ts',
  'test/core/origin-guard.test.ts',
  'test/core/rate-limits.test.ts',
  'test/core/registry-feed.test.ts',
  'test/core/outgoing-headers.test.ts',
  'test/core/request-head.test.ts',
  'test/core/router.test.ts',
  'test/core/session-request-limit.test.ts',
  'test/core/sse.test.ts',
  'test/core/token-bucket.test.ts',
  'test/core/transparent-headers.test.ts',
  'test/core/upstream-pool.test.ts',
  'test/eras/bytes.test.ts',
  'test/eras/json-scan-wasm.test.ts',
  'test/examples/deploy.test.ts',
  'test/incoming-auth/bearer.test.ts',
  'test/incoming-auth/issuer-http.test.ts',
  'test/incoming-auth/jwks-cache.test.ts',
  'test/incoming-auth/oidc-plugin.test.ts',
  'test/incoming-auth/resource-metadata.test.ts',
  'test/incoming-auth/token-cache.test.ts',
  'test/incoming-auth/validator-issuer.test.ts',
  'test/incoming-auth/validator.test.ts',
  'test/registry/claims.test.ts',
  'test/registry/publish-rules.test.ts',
  'test/registry/roles.test.ts',
  'test/registry/version-order.test.ts',
  'test/stdio/line-splitter.test.ts',
  'test/stdio/stderr-lines.test.ts',
  'test/stdio/stdout-messages.test.ts',
  'test/store/memory-session-store.test.ts',
  'test/structure/',
];

export const E2E: readonly string[] = [
  'test/aggregate/aggregated.test.ts',
  'test/aggregate/views.test.ts',
  'test/aggregate/views-attack.test.ts',
  'test/bench/floor-proxy.test.ts',
  'test/aggregate/failures.test.ts',
  'test/aggregate/healing.test.ts',
  'test/aggregate/resumed-replicas.test.ts',
  'test/aggregate/shared-sessions.test.ts',
  'test/audit/vmcp-audit.test.ts',
  'test/auth-server/',
  'test/cli/',
  'test/core/connection-limits.test.ts',
  'test/core/node-engine-limits.test.ts',
  'test/core/fast-string-methods.test.ts',
  'test/core/rate-limit.test.ts',
  'test/core/token-bucket-redis.test.ts',
  'test/core/wire-server.test.ts',
  'test/eras/hardening.test.ts',
  'test/eras/implicit-race.test.ts',
  'test/eras/legacy-client.test.ts',
  'test/eras/matrix.test.ts',
  'test/eras/modern-client.test.ts',
  'test/eras/replicas.test.ts',
  'test/eras/session-create.test.ts',
  'test/eras/stream-requests.test.ts',
  'test/eras/transparent.test.ts',
  'test/examples/embedded-auth.test.ts',
  'test/examples/quickstart.test.ts',
  'test/examples/registry-quickstart.test.ts',
  'test/fixtures/',
  'test/gateway/',
  'test/incoming-auth/browser-cors.test.ts',
  'test/incoming-auth/cluster.test.ts',
  'test/incoming-auth/issuer-http-process.test.ts',
  'test/incoming-auth/gateway-refusals.test.ts',
  'test/incoming-auth/oidc-provider.test.ts',
  'test/outgoing-auth/',
  'test/plugins/',
  'test/registry/api-source.test.ts',
  'test/registry/audit.test.ts',
  'test/registry/authz-admin.test.ts',
  'test/registry/authz-consumer.test.ts',
  'test/registry/authz-publish.test.ts',
  'test/registry/bad-input.test.ts',
  'test/registry/cli.test.ts',
  'test/registry/cluster-source.test.ts',
  'test/registry/config.test.ts',
  'test/registry/file-source.test.ts',
  'test/registry/git-source.test.ts',
  'test/registry/git-sync.test.ts',
  'test/registry/modes.test.ts',
  'test/registry/official-schema.test.ts',
  'test/registry/openapi.test.ts',
  'test/registry/providers.test.ts',
  'test/registry/publish-claims.test.ts',
  'test/registry/reload.test.ts',
  'test/registry/skill-shape.test.ts',
  'test/registry/source-kinds.test.ts',
  'test/registry/store.test.ts',
  'test/registry/sync-replicas.test.ts',
  'test/registry/sync-status.test.ts',
  'test/registry/tombstones.test.ts',
  'test/scale/',
  'test/security/',
  'test/sse/',
  'test/stdio/child.test.ts',
  'test/stdio/child-bounds.test.ts',
  'test/stdio/hostile-output.test.ts',
  'test/stdio/watchdog.test.ts',
  'test/store/redis.test.ts',
  'test/store/sentinel.test.ts',
];

/** Every test file `npm test` runs: test/<folder>/<name>.test.ts, repository-relative. */
export function testFiles(): string[] {
  const files: string[] = [];
  for (const folder of readdirSync(join(REPO_ROOT, 'test'))) {
    if (!statSync(join(REPO_ROOT, 'test', folder)).isDirectory()) continue;
    for (const name of readdirSync(join(REPO_ROOT, 'test', folder))) if (name.endsWith('.test.ts')) files.push(`test/${folder}/${name}`);
  }
  return files.sort();
}

/** Whether a list entry (a folder ending in `/`, or a file) matches a test file. */
export function entryMatches(entry: string, file: string): boolean {
  return entry.endsWith('/') ? file.startsWith(entry) : file === entry;
}

/** The test files of one tier. */
export function tierFiles(tier: Tier): string[] {
  const entries = tier === 'unit' ? UNIT : E2E;
  return testFiles().filter((file) => entries.some((entry) => entryMatches(entry, file)));
}
