/**
 * IssuerHttp's worker thread in a process of its own: once its requests are answered, the thread
 * does not keep the process alive, whether or not the client was closed (the gateway's issuer
 * clients stay open while it runs; a one-shot command using one must still exit).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

describe('IssuerHttp thread, in a process', () => {
  it('does not keep a process alive once its requests are answered, closed or not', () => {
    const script = `
      import { createServer } from 'node:http';
      import { IssuerHttp } from ${JSON.stringify(new URL('../../plugins/incoming-auth/issuer-http.ts', import.meta.url).href)};
      const srv = createServer((req, res) => res.end('{"ok":true}'));
      await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
      const base = 'http://127.0.0.1:' + srv.address().port;
      const client = new IssuerHttp({ issuer: new URL(base), allowPrivateIp: false, timeoutMs: 2000 });
      const { json } = await client.getJson(base + '/doc');
      srv.close();
      console.log(JSON.stringify(json));
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').at(-1)!), { ok: true });
  });
});
