/**
 * What several workers cost a virtual MCP server, told once at start by the primary: a backend
 * the gateway holds a channel to per session (a stdio process, a legacy SSE connection) lives in
 * one worker. A session whose next request reaches another worker finds none there:
 *  - aggregated, the session heals there (the backend is initialized again with the session's
 *    parameters, a new process or connection), and its backend session is then the new one, so
 *    the next move back heals again: each move starts a process. A shared stdio process
 *    (`spec.stdio.shared: true`) is one per worker, and a move costs no process;
 *  - transparent, the client's session is the channel's: another worker answers 404, and the
 *    client initializes again.
 */
import { needsAggregation, type VmcpConfig } from '@gatehouse-mcp/gateway';

export function vmcpWorkerWarnings(config: VmcpConfig, workers: number): string[] {
  const perSession = config.backends.filter((b) => b.transport.kind === 'sse' || (b.transport.kind === 'stdio' && !b.transport.shared));
  if (!needsAggregation(config.backends.length, config.aggregation, config.registry !== null)) {
    const only = config.backends[0];
    if (only === undefined || only.transport.kind === 'streamable-http') return [];
    return [
      `backend "${only.name}" (${only.transport.kind}) is served transparently by ${workers} workers: a client's session lives in the worker that opened it, and a request of it that reaches another worker is answered 404 (the client must initialize again). Aggregate the group, or serve it with workers: 1`,
    ];
  }
  return perSession.map(
    (b) =>
      `backend "${b.name}" holds ${b.transport.kind === 'sse' ? 'an SSE connection' : 'a process'} per session${b.transport.kind === 'stdio' ? ' (spec.stdio.shared: false)' : ''}: with ${workers} workers, each time a session's requests move to another worker it is initialized again there, ${b.transport.kind === 'sse' ? 'on a new connection' : 'in a new process'}${b.transport.kind === 'stdio' ? ' (spec.stdio.shared: true, one process per worker, avoids it)' : ''}`,
  );
}
