import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NOT_FORWARDED, RequestHead } from '../../core/http/request-head.ts';
import { isIdentityHeader } from '../../core/http/identity-headers.ts';

describe('RequestHead', () => {
  it('reads the headers the core needs in one pass, first value wins', () => {
    const head = new RequestHead([
      'Host', 'gw:1', 'Content-Type', 'application/json', 'MCP-Method', 'tools/call', 'Mcp-Name', 'echo',
      'X-Request-Id', 'abc', 'Authorization', 'Bearer a', 'authorization', 'Bearer b', 'Origin', 'https://o', 'Host', 'second',
    ]);
    assert.equal(head.host, 'gw:1');
    assert.equal(head.contentType, 'application/json');
    assert.equal(head.mcpMethod, 'tools/call');
    assert.equal(head.mcpName, 'echo');
    assert.equal(head.requestId, 'abc');
    assert.equal(head.authorization, 'Bearer a');
    assert.equal(head.authorizationCount, 2, 'a repeated Authorization is visible to incoming auth');
    assert.equal(head.origin, 'https://o');
  });

  it('reads a name the same whether written in lower case or not, and forwards it in lower case', () => {
    // Lower-case names are read as written, others lowered first (request-head.ts): both ways in one head.
    const head = new RequestHead([
      'host', 'gw:1', 'CONTENT-TYPE', 'application/json', 'mcp-method', 'tools/call', 'Mcp-Protocol-Version', '2025-11-25',
      'content-length', '0', 'Accept', '*/*', 'x-custom', 'a', 'X-Custom', 'b', 'Via', '1.1 a', 'via', '1.1 b',
    ]);
    assert.equal(head.host, 'gw:1');
    assert.equal(head.contentType, 'application/json');
    assert.equal(head.mcpMethod, 'tools/call');
    assert.equal(head.protocolVersion, '2025-11-25');
    assert.equal(head.hasBody, false);
    assert.equal(head.via, '1.1 a, 1.1 b');
    assert.deepEqual(head.forward, [
      'content-type', 'application/json', 'mcp-method', 'tools/call', 'mcp-protocol-version', '2025-11-25',
      'accept', '*/*', 'x-custom', 'a', 'x-custom', 'b',
    ]);
  });

  it('forwards the headers it reads as they are: none of them is one it drops or sets apart', () => {
    // request-head.ts forwards these without looking their class up.
    const read = ['content-type', 'mcp-method', 'mcp-name', 'mcp-protocol-version', 'mcp-session-id'];
    for (const name of read) assert.ok(!NOT_FORWARDED.includes(name) && !isIdentityHeader(name) && name !== 'via', name);
    const head = new RequestHead(read.flatMap((name) => [name, `${name} value`]));
    assert.deepEqual(head.forward, read.flatMap((name) => [name, `${name} value`]));
  });

  it('tells every name it drops or sets apart from its neighbours of the same length and first letter', () => {
    // Names of the classes' lengths and first letters, classed or not (the table only spares the lookup).
    const head = new RequestHead([
      'cookie', 'c=1', 'cookies', 'x', 'coffee', 'y', 'te', 'trailers', 'tx', 'z', 'proxy', 'p', 'proxi', 'q',
      'x-real-ip', '1.2.3.4', 'x-real-id', 'r', 'via', '1.1 a', 'vis', 's', 'Origin', 'https://o', 'orient', 't',
    ]);
    assert.deepEqual(head.forward, ['cookies', 'x', 'coffee', 'y', 'tx', 'z', 'proxi', 'q', 'x-real-id', 'r', 'vis', 's', 'orient', 't']);
    assert.deepEqual(head.identity, ['x-real-ip', '1.2.3.4']);
    assert.equal(head.via, '1.1 a');
  });

  it('reads Mcp-Session-Id, joining repeated ones as node:http would (an id no session has)', () => {
    assert.equal(new RequestHead(['Mcp-Session-Id', 'abc']).sessionId, 'abc');
    assert.equal(new RequestHead(['mcp-session-id', 'abc', 'MCP-SESSION-ID', 'def']).sessionId, 'abc, def');
    assert.equal(new RequestHead(['Host', 'x']).sessionId, undefined);
  });

  it('forwards end-to-end headers only: no hop-by-hop, Host, credentials, Origin, length, request id or Proxy (httpoxy)', () => {
    const head = new RequestHead([
      'Host', 'gw:1', 'Connection', 'keep-alive, X-Hop', 'X-Hop', '1', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked',
      'Authorization', 'Bearer secret', 'Cookie', 'sid=1', 'Origin', 'https://o', 'Content-Length', '10', 'X-Request-Id', 'r',
      'Proxy-Authorization', 'Basic x', 'TE', 'trailers', 'Upgrade', 'h2c', 'Expect', '100-continue', 'Proxy', 'http://10.0.0.1:3128',
      'Content-Type', 'application/json', 'Accept', 'application/json, text/event-stream', 'Mcp-Session-Id', 's1',
      'MCP-Protocol-Version', '2025-11-25', 'Last-Event-ID', 'e9', 'Mcp-Method', 'tools/list', 'X-Custom', 'kept',
    ]);
    assert.deepEqual(head.forward, [
      'content-type', 'application/json', 'accept', 'application/json, text/event-stream', 'mcp-session-id', 's1',
      'mcp-protocol-version', '2025-11-25', 'last-event-id', 'e9', 'mcp-method', 'tools/list', 'x-custom', 'kept',
    ]);
  });
});

describe('RequestHead: identity and proxy headers', () => {
  it('sets them apart from the forwarded list, whatever their case; null when there are none', () => {
    const head = new RequestHead([
      'Accept', 'application/json', 'X-Forwarded-For', '10.0.0.1', 'FORWARDED', 'for=10.0.0.1', 'X-Real-Ip', '10.0.0.1',
      'x-auth-request-email', 'a@b.c', 'X-Trace-Id', 't', 'X-FORWARDED-USER', 'root', 'Remote-User', 'root', 'X-Envoy-Internal', 'true',
    ]);
    assert.deepEqual(head.forward, ['accept', 'application/json', 'x-trace-id', 't']);
    assert.deepEqual(head.identity, [
      'x-forwarded-for', '10.0.0.1', 'forwarded', 'for=10.0.0.1', 'x-real-ip', '10.0.0.1', 'x-auth-request-email', 'a@b.c',
      'x-forwarded-user', 'root', 'remote-user', 'root', 'x-envoy-internal', 'true',
    ]);
    assert.equal(new RequestHead(['Accept', '*/*', 'X-Forwarder', 'no', 'X-Forward', 'no', 'Remote', 'no']).identity, null, 'names that only look alike');
  });

  it('sets apart their underscore spellings, which CGI, WSGI and Rack backends read as the same header', () => {
    // PHP, Apache CGI, WSGI and Rack name a header by its variable, `-` and `_` alike turned into `_`:
    // X_Forwarded_For and X-Forwarded-For are both HTTP_X_FORWARDED_FOR there.
    const head = new RequestHead([
      'X_Forwarded_For', '10.0.0.1', 'Remote_User', 'root', 'X-Auth-Request_Email', 'a@b.c', 'X_REAL_IP', '10.0.0.1',
      'OIDC_CLAIM_email', 'a@b.c', 'OIDC-CLAIM-email', 'a@b.c', 'X_Trace_Id', 't',
    ]);
    assert.deepEqual(head.forward, ['x_trace_id', 't']);
    assert.deepEqual(head.identity, [
      'x_forwarded_for', '10.0.0.1', 'remote_user', 'root', 'x-auth-request_email', 'a@b.c', 'x_real_ip', '10.0.0.1',
      'oidc_claim_email', 'a@b.c', 'oidc-claim-email', 'a@b.c',
    ]);
  });

  it('drops the ones the client lists in Connection there too', () => {
    const head = new RequestHead(['Connection', 'close, X-Real-IP', 'X-Real-IP', '1', 'X-Forwarded-For', '2']);
    assert.deepEqual(head.identity, ['x-forwarded-for', '2']);
  });
});
