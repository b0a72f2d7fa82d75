/**
 * `server.workers` above 1 runs several processes on one port (plugins/cli/workers/): a client's
 * next connection may land on any of them, so whatever a client's next request needs must be
 * shared between them, not held in one worker's memory. A VirtualMCPServer is refused, at
 * `spec.server.workers`, when something it keeps would not be:
 *  - its sessions in memory (`spec.config.session.storage`): a session opened through one worker
 *    is unknown to the others (404), in aggregated and transparent mode alike;
 *  - the embedded authorization server's records in memory (`authServerConfig.storage`): a
 *    client registered, or a code issued, through one worker is unknown to the next;
 *  - the embedded authorization server without configured keys and HMAC secrets: each worker
 *    makes its own, and refuses the tokens and cookies of the others.
 * `auto` is refused as any number above 1 would be, whatever this machine's cores: a file that
 * passes here must not fail on a larger machine.
 */
import { addIssue, type Ctx } from './formats.ts';
import { isMapping } from './yaml.ts';

/** Whether `workers` (as written or resolved) may mean more than one process. */
export function severalWorkers(workers: unknown): boolean {
  return workers === 'auto' || (typeof workers === 'number' && workers > 1);
}

/** The subject and verb of a problem: `2 workers need`, `auto (a worker per core) needs`. */
const described = (workers: unknown): string => (workers === 'auto' ? 'auto (a worker per core) needs' : `${String(workers)} workers need`);

/**
 * An audit trail to a file (`audit.logFile`) with several workers: each worker would rotate the
 * one file on its own (renaming it under the others' records), so it is refused; syslog or
 * stdout serve several workers. The problem's text, or null.
 */
export function auditFileProblem(workers: unknown, audit: unknown): string | null {
  if (!severalWorkers(workers) || !isMapping(audit) || audit.enabled !== true || typeof audit.logFile !== 'string') return null;
  return `${described(workers)} an audit trail each can write alone, but logFile is one file that each worker would rotate on its own: with several workers send the records to syslog (syslog: {address: ...}) or stdout (no logFile), or use workers: 1`;
}

/** The VirtualMCPServer spec's problems with `server.workers` (a superRefine of the spec). */
export function workersShareState(spec: unknown, ctx: Ctx): void {
  if (!isMapping(spec) || !isMapping(spec.server) || !severalWorkers(spec.server.workers)) return;
  const what = described(spec.server.workers);
  const path = ['server', 'workers'];
  const config = isMapping(spec.config) ? spec.config : {};
  const audit = auditFileProblem(spec.server.workers, config.audit);
  if (audit !== null) addIssue(ctx, ['config', 'audit', 'logFile'], audit);
  const session = isMapping(config.session) ? config.session : {};
  const storage = isMapping(session.storage) ? session.storage.type : 'memory';
  if (storage !== 'redis') {
    addIssue(
      ctx,
      path,
      `${what} sessions shared between the workers, but spec.config.session.storage is memory: a session opened through one worker would be unknown to the others (404). Set spec.config.session.storage to {type: redis, redis: {...}}, or workers: 1`,
    );
  }
  const auth = spec.authServerConfig;
  if (!isMapping(auth)) return;
  if (!isMapping(auth.storage) || auth.storage.type !== 'redis') {
    addIssue(
      ctx,
      path,
      `${what} the embedded authorization server's records shared between the workers, but spec.authServerConfig.storage is memory: a client registered or a code issued through one worker would be unknown to the others. Set spec.authServerConfig.storage to {type: redis, redis: {...}}, or workers: 1`,
    );
  }
  const missing = (['signingKeySecretRefs', 'hmacSecretRefs'] as const).filter((field) => !Array.isArray(auth[field]) || auth[field].length === 0);
  if (missing.length > 0) {
    addIssue(
      ctx,
      path,
      `${what} the embedded authorization server's keys configured (spec.authServerConfig.${missing.join(' and ')}): without them each worker makes its own, and refuses the tokens and cookies the others issue`,
    );
  }
}
