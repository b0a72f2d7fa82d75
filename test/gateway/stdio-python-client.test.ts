/**
 * The official Python MCP client (`mcp`, test/python/mcp_client.py) through the real gateway to
 * server-everything run over stdio by the gateway: it lists the tools, calls echo, and answers
 * the server's sampling request (the client answers "Paris"), and the call's progress comes back.
 * As a legacy client (initialize, a session) and as a 2026-07-28 client (the gateway holds the
 * stdio session and bridges it), with the backend alone (transparent) and aggregated next to
 * the fixture stdio server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { pythonClient, runPythonClient, type PythonMode, type PythonOutcome } from '../helpers/python-client.ts';
import { everythingBackend, fixtureBackend } from '../helpers/stdio-backends.ts';
import { skipIf } from '../store/helpers/service.ts';

const MODES: PythonMode[] = ['legacy', '2026-07-28'];

function valueOf(outcome: PythonOutcome | undefined): unknown {
  assert.ok(outcome !== undefined, 'no outcome');
  assert.ok(outcome.ok, `failed: ${outcome.ok ? '' : outcome.error}`);
  return outcome.value;
}

const textOfResult = (value: unknown): string => JSON.stringify((value as { content?: unknown }).content ?? value);

for (const layout of ['alone (transparent)', 'aggregated with the fixture stdio server'] as const) {
  describe(`the Python mcp client, through the gateway, to server-everything over stdio ${layout}`, () => {
    let gateway: RunningVmcp;
    const alone = layout.startsWith('alone');
    const tool = (name: string): string => (alone ? name : `everything_${name}`);
    before(async () => {
      gateway = await startTestGateway({
        backends: alone ? [{ name: 'everything', transport: everythingBackend() }] : [{ name: 'everything', transport: everythingBackend() }, { name: 'fx', transport: fixtureBackend() }],
      });
    });
    after(async () => {
      await gateway?.stop();
    });

    for (const mode of MODES) {
      it(`as a ${mode} client: lists tools, calls echo, answers sampling, sees progress`, async (t) => {
        const found = pythonClient('stdio backends with the Python mcp client');
        if ('skip' in found) return void skipIf(t, found);
        const outcomes = await runPythonClient(found.python, gateway.url, mode, [
          { op: 'era' },
          { op: 'tools' },
          { op: 'call', tool: tool('echo'), args: { message: 'from python' } },
          { op: 'call', tool: tool('trigger-sampling-request'), args: { prompt: 'capital of France?' } },
          { op: 'call', tool: tool('trigger-long-running-operation'), args: { duration: 0.3, steps: 3 } },
          ...(alone ? [] : [{ op: 'call' as const, tool: 'fx_echo', args: { text: 'fixture' } }]),
        ]);
        assert.equal((valueOf(outcomes[0]) as string), mode === 'legacy' ? 'legacy' : 'modern');
        const names = valueOf(outcomes[1]) as string[];
        for (const name of ['echo', 'trigger-sampling-request', 'trigger-long-running-operation']) assert.ok(names.includes(tool(name)), `${tool(name)} in ${names.join(', ')}`);
        assert.match(textOfResult(valueOf(outcomes[2])), /from python/);
        assert.match(textOfResult(valueOf(outcomes[3])), /Paris/);
        assert.match(textOfResult(valueOf(outcomes[4])), /completed/i);
        assert.deepEqual((outcomes[4] as { progress?: number[] }).progress, [1, 2, 3]);
        if (!alone) assert.match(textOfResult(valueOf(outcomes[5])), /fixture/);
      });
    }
  });
}
