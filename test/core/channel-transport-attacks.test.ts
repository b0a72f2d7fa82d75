/**
 * `ChannelTransport` (core/upstream/channel/) against a hostile or buggy backend and hostile
 * clients, driven by hand (helpers/scripted-channels.ts): a message the backend makes up must
 * not throw out of the channel's callback, what a call leaves behind when it fails must go with
 * it, one client must not deny or reach another's session, and what sessions hold is bounded.
 * Most cases take the answer as bytes (the pass-through's way); the last ones as messages
 * (`MessageReader`, the way every other exchange takes it): held while paused, bounded, abandoned
 * from inside a delivery.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { JsonRpcMessage } from '../../core/protocol/jsonrpc.ts';
import type { MessageReader } from '../../core/upstream/transport.ts';
import { CLIENT_PARAMS, getStream, openSession, post, RecordingHandler, scriptedTransport, tick } from './helpers/scripted-channels.ts';

const call = (id: number, name = 'work', meta?: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, ...(meta ? { _meta: meta } : {}) } });
const sampling = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } }) as JsonRpcMessage;

describe('a backend\'s made-up messages never throw out of the channel', () => {
  it('a progress notification whose token is an object that cannot be turned into a string', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const answer = post(transport, call(7, 'work', { progressToken: 'mine' }), session);
    await tick();
    const hostile = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: { toString: 1 }, progress: 1 } } as unknown as JsonRpcMessage;
    // From a child's stdout this runs inside a stream's 'data' callback: a throw there ends the gateway.
    assert.doesNotThrow(() => channels[0]!.emit(hostile));
    const sent = channels[0]!.requests('tools/call')[0]!;
    channels[0]!.emit({ jsonrpc: '2.0', id: sent.id as number, result: { content: [] } });
    await answer.done();
    assert.deepEqual(answer.bodyMessages().at(-1), { jsonrpc: '2.0', id: 7, result: { content: [] } });
    await transport.close();
  });
});

describe('a call that fails leaves nothing behind at its channel', () => {
  it('a call past its answer timeout is cancelled at the backend, and its channel can go idle', async () => {
    const { transport, channels } = scriptedTransport({ idleTimeoutMs: 200 });
    const session = await openSession(transport);
    const answer = post(transport, call(1), session, 300);
    await answer.done();
    assert.equal(answer.error?.code, 'EANSWER_TIMEOUT');
    const linkId = channels[0]!.requests('tools/call')[0]!.id;
    const cancelled = channels[0]!.requests('notifications/cancelled').map((m) => (m.params as { requestId: unknown }).requestId);
    assert.deepEqual(cancelled, [linkId], 'the backend is told the call is over, as when its client goes away');
    await tick(700);
    assert.equal(transport.channels, 0, 'no call is under way: the channel ends after idleTimeout');
    await transport.close();
  });

  it('after a call timed out, a request the backend sends during the next (only) call goes to that call', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const first = post(transport, call(1), session, 300);
    await first.done();
    assert.equal(first.error?.code, 'EANSWER_TIMEOUT');
    const second = post(transport, call(2), session);
    await tick();
    channels[0]!.emit(sampling('ask-1'));
    const refusals = channels[0]!.sent.filter((m) => m.id === 'ask-1' && 'error' in m);
    assert.deepEqual(refusals, [], 'the backend\'s request is not refused: one call is under way');
    await tick(50);
    assert.ok(second.bodyMessages().some((m) => m.id === 'ask-1'), `the request reached the call: ${second.body}`);
    await transport.close();
  });
});

describe('one client cannot deny or reach another\'s session', () => {
  it('an initialize the backend refuses (the client\'s own params) does not make the next session wait out a backoff', async () => {
    const { transport } = scriptedTransport({ refuseInit: (params) => (params.clientInfo === undefined ? 'clientInfo is required' : null) });
    const bad = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, null);
    await bad.done();
    assert.match(bad.error?.message ?? '', /refused initialize/);
    // Another client, well-formed, right after: the backend is up and answers; nothing failed to start.
    const good = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: CLIENT_PARAMS }, null);
    await good.done();
    assert.equal(good.error, null, `refused: ${good.error?.message}`);
    assert.equal(good.status, 200);
    assert.equal(transport.sessions, 1, 'the refused one is not kept');
    for (let i = 0; i < 5; i++) await post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, null).done();
    assert.equal(transport.sessions, 1, 'nor are these: a client cannot fill the sessions with refused initializes');
    await transport.close();
  });

  it('shared: a backend request no single call can be credited with is not sent to a session that made no call', async () => {
    const { transport, channels } = scriptedTransport({ shared: true });
    const [a, b, bystander] = [await openSession(transport), await openSession(transport), await openSession(transport)];
    const stream = getStream(transport, bystander);
    post(transport, call(1), a);
    post(transport, call(1), b);
    await tick();
    // Sampling with a's (or b's) prompt: the bystander must neither see it nor answer it.
    channels[0]!.emit(sampling('ask-1'));
    await tick();
    assert.ok(!stream.body.includes('ask-1'), `the bystander's stream got another session's request: ${stream.body}`);
    assert.ok(channels[0]!.sent.some((m) => m.id === 'ask-1' && 'error' in m), 'the backend is told nobody can answer');
    await transport.close();
  });

  it('shared: requests a session was asked and never answered do not, once it ended, keep other sessions from being asked', async () => {
    const { transport, channels } = scriptedTransport({ shared: true });
    const silent = await openSession(transport);
    getStream(transport, silent);
    await tick();
    for (let i = 0; i < 1024; i++) channels[0]!.emit(sampling(`s${i}`));
    // The silent client goes away without answering.
    const deleted = await new Promise<number>((resolve) => {
      const h = { attach() {}, onHeaders: (status: number) => (resolve(status), true), onData: () => true, onComplete() {}, onError() {} };
      transport.dispatch(h, 'DELETE', '/mcp', ['mcp-session-id', silent], null, 10_000);
    });
    assert.equal(deleted, 200);
    assert.equal(channels[0]!.sent.filter((m) => typeof m.id === 'string' && m.id.startsWith('s') && 'error' in m).length, 1024, 'the backend is told none of them will be answered');
    const other = await openSession(transport);
    const answer = post(transport, call(1), other);
    await tick();
    channels[0]!.emit(sampling('for-other'));
    await tick();
    const refused = channels[0]!.sent.find((m) => m.id === 'for-other' && 'error' in m);
    assert.equal(refused, undefined, `refused: ${JSON.stringify(refused)}`);
    assert.ok(answer.bodyMessages().some((m) => m.id === 'for-other'));
    await transport.close();
  });
});

describe('one client cannot deny or reach another\'s session (shared child, by design of one backend session)', () => {
  it('shared: a session that is asked and never answers does not, while it lasts, keep other sessions from being asked', async () => {
    const { transport, channels } = scriptedTransport({ shared: true });
    const silent = await openSession(transport);
    // Each of its calls makes the backend ask it something; it answers none of them.
    for (let i = 0; i < 1024; i++) {
      post(transport, call(i + 1), silent);
      channels[0]!.emit(sampling(`s${i}`));
      const sent = channels[0]!.requests('tools/call').at(-1)!;
      channels[0]!.emit({ jsonrpc: '2.0', id: sent.id as number, result: { content: [] } });
    }
    const other = await openSession(transport);
    const answer = post(transport, call(1), other);
    await tick();
    channels[0]!.emit(sampling('for-other'));
    await tick();
    assert.equal(channels[0]!.sent.find((m) => m.id === 'for-other' && 'error' in m), undefined, 'the other session is asked');
    assert.ok(answer.bodyMessages().some((m) => m.id === 'for-other'));
    await transport.close();
  });

  it('shared: each session\'s initialize is answered for the version it asked, not for the first session\'s', async () => {
    const { transport } = scriptedTransport({ shared: true });
    const first = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { ...CLIENT_PARAMS, protocolVersion: '2024-11-05' } }, null);
    await first.done();
    const second = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { ...CLIENT_PARAMS, protocolVersion: '2025-06-18' } }, null);
    await second.done();
    const result = second.bodyMessages()[0]!.result as { protocolVersion: string };
    assert.equal(result.protocolVersion, '2025-06-18', 'the second client is told the version the first one asked for');
    await transport.close();
  });
});

describe('checked and sound: ids, cancellations and answers stay with their session', () => {
  it('responses to ids the backend was never sent (0, a string, another number) are dropped; the real one passes', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const answer = post(transport, call(0), session);
    await tick();
    const linkId = channels[0]!.requests('tools/call')[0]!.id as number;
    for (const id of [0, String(linkId), linkId + 1, -1]) channels[0]!.emit({ jsonrpc: '2.0', id, result: { forged: true } });
    channels[0]!.emit({ jsonrpc: '2.0', id: linkId, result: { content: [] } });
    channels[0]!.emit({ jsonrpc: '2.0', id: linkId, result: { again: true } });
    await answer.done();
    assert.deepEqual(answer.bodyMessages(), [{ jsonrpc: '2.0', id: 0, result: { content: [] } }]);
    await transport.close();
  });

  it('shared: a client cannot cancel, nor answer for, another session', async () => {
    const { transport, channels } = scriptedTransport({ shared: true });
    const [a, b] = [await openSession(transport), await openSession(transport)];
    post(transport, call(5), a);
    await tick();
    channels[0]!.emit(sampling('asked-of-a'));
    post(transport, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }, b);
    post(transport, { jsonrpc: '2.0', id: 'asked-of-a', result: { role: 'assistant', content: { type: 'text', text: 'from b' }, model: 'm' } }, b);
    await tick();
    assert.deepEqual(channels[0]!.requests('notifications/cancelled'), []);
    assert.equal(channels[0]!.sent.find((m) => m.id === 'asked-of-a'), undefined);
    await transport.close();
  });

  it('a backend that exits at start is backed off (1 s, then 2 s), then tried again; one that never answers initialize is ended at startupTimeout', async () => {
    const { transport, channels } = scriptedTransport({ onOpen: (channel) => queueMicrotask(() => channel.exit('exited with status 1')) });
    const init = () => post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: CLIENT_PARAMS }, null);
    const first = init();
    await first.done();
    assert.match(first.error?.message ?? '', /exited with status 1/);
    const waiting = init();
    await waiting.done();
    assert.match(waiting.error?.message ?? '', /exited with status 1; it is tried again in 1 s/);
    assert.equal(channels.length, 1, 'nothing is started while it waits');
    await tick(1_050);
    const second = init();
    await second.done();
    assert.equal(channels.length, 2);
    const doubled = init();
    await doubled.done();
    assert.match(doubled.error?.message ?? '', /tried again in 2 s/);
    await transport.close();

    const silent = scriptedTransport({ silent: true, startupTimeoutMs: 300 });
    const unanswered = post(silent.transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: CLIENT_PARAMS }, null);
    await unanswered.done();
    assert.match(unanswered.error?.message ?? '', /did not answer initialize within 300 ms \(startupTimeout\)/);
    assert.equal(silent.channels[0]!.closed, true);
    await silent.transport.close();
  });

  it('a paused answer holds what comes, delivers it in order on resume and ends once; one abandoned while paused is cancelled at the backend', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const answer = post(transport, call(3, 'work', { progressToken: 't' }), session);
    answer.paused = true;
    await tick();
    const linkId = channels[0]!.requests('tools/call')[0]!.id as number;
    const linkToken = ((channels[0]!.requests('tools/call')[0]!.params as { _meta: { progressToken: string } })._meta.progressToken);
    channels[0]!.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: linkToken, progress: 1 } });
    channels[0]!.emit({ jsonrpc: '2.0', id: linkId, result: { content: [] } });
    channels[0]!.emit({ jsonrpc: '2.0', id: linkId, result: { twice: true } });
    assert.equal(answer.completed, false, 'the end waits behind what is held');
    answer.paused = false;
    answer.carrier!.resume();
    await answer.done();
    assert.deepEqual(answer.bodyMessages(), [
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } },
      { jsonrpc: '2.0', id: 3, result: { content: [] } },
    ]);
    const left = post(transport, call(4), session);
    left.paused = true;
    await tick();
    left.carrier!.abort();
    const leftId = channels[0]!.requests('tools/call')[1]!.id;
    assert.deepEqual(channels[0]!.requests('notifications/cancelled').map((m) => (m.params as { requestId: unknown }).requestId), [leftId]);
    await transport.close();
  });

  it('shared: two sessions\' calls with the same id and the same progress token each get their own progress and response', async () => {
    const { transport, channels } = scriptedTransport({ shared: true });
    const [a, b] = [await openSession(transport), await openSession(transport)];
    const answers = [post(transport, call(1, 'work', { progressToken: 'same' }), a), post(transport, call(1, 'work', { progressToken: 'same' }), b)];
    await tick();
    const sent = channels[0]!.requests('tools/call');
    const tokens = sent.map((m) => (m.params as { _meta: { progressToken: string } })._meta.progressToken);
    assert.notEqual(tokens[0], tokens[1]);
    // Answered in the other order, b first.
    for (const i of [1, 0]) {
      channels[0]!.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: tokens[i], progress: i + 10 } });
      channels[0]!.emit({ jsonrpc: '2.0', id: sent[i]!.id as number, result: { who: i } });
    }
    await Promise.all(answers.map((answer) => answer.done()));
    for (const i of [0, 1]) {
      assert.deepEqual(answers[i]!.bodyMessages(), [
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'same', progress: i + 10 } },
        { jsonrpc: '2.0', id: 1, result: { who: i } },
      ]);
    }
    await transport.close();
  });

  it('a batch with initialize in it is refused; initialize on a session is refused', async () => {
    const { transport } = scriptedTransport();
    const session = await openSession(transport);
    const batch = post(transport, [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: CLIENT_PARAMS }, call(2)], null);
    const again = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: CLIENT_PARAMS }, session);
    await Promise.all([batch.done(), again.done()]);
    assert.equal(batch.status, 400);
    assert.equal(again.status, 400);
    await transport.close();
  });
});

describe('what sessions hold is bounded', () => {
  it('10,000 sessions at most, but not 10,000 initialize bodies: a session keeps 16 KiB of params at most, and larger ones are refused naming the bound', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { transport } = scriptedTransport({ shared: true });
    await openSession(transport);
    gc();
    const before = process.memoryUsage().heapUsed;
    const filler = 'x'.repeat(1024 * 1024);
    // 48 clients (of the 10,000 allowed), each with an initialize of 1 MiB (of the 4 MiB a body may be), outside what is kept...
    for (let i = 0; i < 48; i++) await openSession(transport, { ...CLIENT_PARAMS, padding: filler + i });
    // ...and 48 with it inside clientInfo, which a new channel's handshake would send again: refused.
    for (let i = 0; i < 48; i++) {
      const refused = post(transport, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { ...CLIENT_PARAMS, clientInfo: { name: `c${i}`, version: '1', padding: filler + i } } }, null);
      await refused.done();
      assert.equal(refused.status, 400);
      assert.match(refused.body, /at most 16384 are kept for a session/);
    }
    gc();
    const grown = (process.memoryUsage().heapUsed - before) / (1024 * 1024);
    assert.ok(grown < 16, `48 sessions hold ${grown.toFixed(0)} MiB`);
    assert.equal(transport.sessions, 49);
    await transport.close();
  });

  it('GET streams on a channel backend are bounded in number, as an HTTP backend\'s are (256)', async () => {
    const { transport } = scriptedTransport({ shared: true });
    let refused = 0;
    for (let i = 0; i < 300; i++) {
      const stream = getStream(transport, await openSession(transport));
      if (stream.status !== 200 || stream.error !== null) refused++;
    }
    assert.ok(refused > 0, 'each of 300 sessions holds a GET stream (each may hold maxResponseBytes for a client that does not read)');
    await transport.close();
  });
});

/** An exchange that reads messages (MessageReader): given the head, events and body as they are, pausing as a slow client does. */
class ReadingHandler extends RecordingHandler {
  readonly events: string[] = [];
  answerHead: { streamed: boolean; kind: string } | null = null;
  /** Called on each event delivered (a test may abort the exchange from inside the delivery). */
  onEach: (() => void) | null = null;
  get messages(): MessageReader {
    return {
      onAnswer: (head, streamed) => {
        this.answerHead = { streamed, kind: head.kind };
        return !this.paused;
      },
      onEvents: (events) => {
        for (const event of events) {
          this.events.push(event.data);
          this.onEach?.();
        }
        return !this.paused;
      },
      onBody: (body) => void this.events.push(body.toString('utf8')),
    };
  }
}

function postReading(transport: ReturnType<typeof scriptedTransport>['transport'], body: unknown, sessionId: string): ReadingHandler {
  const handler = new ReadingHandler();
  transport.dispatch(handler, 'POST', '/mcp', ['accept', 'application/json, text/event-stream', 'content-type', 'application/json', 'mcp-session-id', sessionId], Buffer.from(JSON.stringify(body)), 10_000);
  return handler;
}

describe('an exchange that reads messages: held while paused, bounded, and abandoned mid-delivery', () => {
  it('holds what comes while paused and gives it in order on resume, then ends once', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const answer = postReading(transport, call(3, 'work', { progressToken: 't' }), session);
    answer.paused = true;
    await tick();
    const sent = channels[0]!.requests('tools/call')[0]!;
    const token = (sent.params as { _meta: { progressToken: string } })._meta.progressToken;
    for (let i = 1; i <= 3; i++) channels[0]!.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i } });
    channels[0]!.emit({ jsonrpc: '2.0', id: sent.id as number, result: { content: [] } });
    assert.equal(answer.completed, false);
    answer.paused = false;
    answer.carrier!.resume();
    await answer.done();
    assert.deepEqual(answer.answerHead, { streamed: true, kind: 'events' });
    assert.deepEqual(answer.events.map((e) => JSON.parse(e) as { params?: { progress: number }; id?: number }).map((m) => m.params?.progress ?? `id ${m.id}`), [1, 2, 3, 'id 3']);
    assert.equal(answer.body, '', 'no bytes: the messages as they are');
    await transport.close();
  });

  it('a client that does not read makes the answer fail at the bound, not hold more', async () => {
    const { transport, channels } = scriptedTransport({ maxResponseBytes: 4096 });
    const session = await openSession(transport);
    const answer = postReading(transport, call(4, 'work', { progressToken: 't' }), session);
    answer.paused = true;
    await tick();
    const token = ((channels[0]!.requests('tools/call')[0]!.params as { _meta: { progressToken: string } })._meta.progressToken);
    for (let i = 0; i < 100; i++) channels[0]!.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i, message: 'x'.repeat(200) } });
    await answer.done();
    assert.match(answer.error?.message ?? '', /larger than|more than its client took in/);
    await transport.close();
  });

  it('aborted from inside a delivery on resume: nothing more is delivered, nothing completes, nothing throws', async () => {
    const { transport, channels } = scriptedTransport();
    const session = await openSession(transport);
    const answer = postReading(transport, call(5, 'work', { progressToken: 't' }), session);
    answer.paused = true;
    await tick();
    const sent = channels[0]!.requests('tools/call')[0]!;
    const token = (sent.params as { _meta: { progressToken: string } })._meta.progressToken;
    for (let i = 1; i <= 3; i++) channels[0]!.emit({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: i } });
    channels[0]!.emit({ jsonrpc: '2.0', id: sent.id as number, result: { content: [] } });
    answer.onEach = () => answer.carrier!.abort();
    answer.paused = false;
    answer.carrier!.resume();
    await tick(20);
    assert.equal(answer.events.length, 1);
    assert.equal(answer.completed, false);
    assert.equal(answer.error, null);
    // The channel serves the session's next call.
    const next = post(transport, call(6), session);
    await tick();
    channels[0]!.emit({ jsonrpc: '2.0', id: channels[0]!.requests('tools/call')[1]!.id as number, result: { content: [] } });
    await next.done();
    assert.deepEqual(next.bodyMessages(), [{ jsonrpc: '2.0', id: 6, result: { content: [] } }]);
    await transport.close();
  });
});
