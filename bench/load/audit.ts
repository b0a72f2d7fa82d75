/**
 * The row that measures the audit trail (spec.config.audit), next to the anonymous row of the
 * same run: every request a record (its JSON built and written) to a file in the run's
 * temporary directory, rotated at 100 MiB, as an operator would run it. `audit trail on` ÷
 * `anonymous, transparent` is the "audit on ÷ off" (off, nothing subscribes: the
 * anonymous row is the trail off).
 */
import { join } from 'node:path';
import { anonymousConfig, gatehouseRow, type GatehouseConfigContext } from './gatehouse.ts';
import type { Row } from './target.ts';

/** The anonymous vMCP with an audit trail to a file. */
function withAudit(ctx: GatehouseConfigContext): string {
  const file = join(ctx.tmpDir, 'gatehouse-audit', 'audit.log');
  return anonymousConfig(ctx).replace('  config: {groupRef: bench}', `  config: {groupRef: bench, audit: {enabled: true, logFile: ${JSON.stringify(file)}}}`);
}

export function auditRow(): Row {
  return gatehouseRow({ name: 'gatehouse (anonymous, audit trail on, to a file)', label: 'audit-on', config: withAudit });
}
