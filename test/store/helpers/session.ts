/** Session records and ids for store tests. */
import { randomUUID } from 'node:crypto';
import type { SessionRecord } from '../../../core/mcp/aggregate/session-store.ts';

export function sessionRecord(id: string = randomUUID(), overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    v: 2,
    id,
    owner: { issuer: 'https://issuer.example', subject: 'user-1' },
    createdAt: 1_700_000_000_000,
    protocolVersion: '2025-06-18',
    clientInfo: { name: 'test-client', version: '1.0.0' },
    clientCapabilities: { roots: { listChanged: true } },
    backends: {
      github: { sessionId: 'backend-session-1', protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: true } } },
      stateless: { sessionId: null, protocolVersion: '2025-03-26', capabilities: {} },
    },
    missing: ['down-backend'],
    ...overrides,
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
