/**
 * A backend's resource template cannot stall the gateway: a template shaped for catastrophic
 * backtracking and a long URI that fails at its end are refused as an unknown resource, the
 * gateway answering as usual (the matcher's work bound is proven in test/aggregate/uri-template.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { RunningVmcp } from '../../core/vmcp/virtual-mcp-server.ts';
import { connectClient } from '../fixtures/client.ts';
import { startSdkServer, type SdkServer } from '../fixtures/sdk-server.ts';
import { startTestGateway } from '../helpers/gateway.ts';

describe('a hostile resource template', () => {
  let hostile: SdkServer;
  let plain: SdkServer;
  let gateway: RunningVmcp;
  before(async () => {
    hostile = await startSdkServer({ name: 'hostile', extraTemplates: ['x://{+a}/{+b}/{+c}/end'] });
    plain = await startSdkServer({ name: 'plain' });
    gateway = await startTestGateway({ backends: [{ name: 'hostile', url: hostile.url }, { name: 'plain', url: plain.url }] });
  });
  after(async () => {
    await gateway.stop();
    await Promise.all([hostile.close(), plain.close()]);
  });

  it('routes a matching URI to its backend, and answers a long non-matching one as unknown', async () => {
    const c = await connectClient(gateway.url);
    try {
      const templates = (await c.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
      assert.ok(templates.includes('x://{+a}/{+b}/{+c}/end'));
      const read = await c.client.readResource({ uri: 'x://1/2/3/end' });
      assert.match(JSON.stringify(read.contents), /of hostile/);
      await assert.rejects(c.client.readResource({ uri: 'x://' + 'a/'.repeat(1_600) + 'x' }), /Resource not found/);
      const health = await fetch(new URL('/healthz', gateway.url));
      assert.equal(health.status, 200);
    } finally {
      await c.close();
    }
  });
});
