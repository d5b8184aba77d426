// Unit tests of the page's StreamHub (Public/stream-hub.js) without a browser or a server: a fake
// EventSource, fetch and timers. Run: node --test tests/browser/ (test_stream_hub.py runs it with pytest).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { StreamHub, HUB_LOG_LIMIT, HUB_LOG_CHARS } = require('../../Public/stream-hub.js');

class FakeEventSource {
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.listeners = {};
    this.closed = false;
    FakeEventSource.all.push(this);
  }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
  close() { this.closed = true; this.readyState = 2; }
  emit(type, data, id) { for (const l of this.listeners[type] || []) l({ data: JSON.stringify(data), lastEventId: id || '' }); }
  error(readyState) { this.readyState = readyState; for (const l of this.listeners.error || []) l({}); }
}

/// A hub with fakes; `status` is what GET /feeds/{feed} answers; `timers` the delays asked for.
function setup(status = 200) {
  FakeEventSource.all = [];
  const timers = [];
  const hub = new StreamHub({
    EventSource: FakeEventSource,
    fetch: async () => ({ status, json: async () => ({ error: 'e', detail: `detail ${status}` }) }),
    setTimeout: (f, ms) => { timers.push({ f, ms }); return timers.length; },
    clearTimeout: () => {},
  });
  const inbox = {};
  const client = (name) => {
    inbox[name] = [];
    return (message) => hub.handle(name, message, (m) => inbox[name].push(m));
  };
  return { hub, inbox, client, timers, sources: FakeEventSource.all };
}

const id = (v, h = 'aaaa') => `ds1.${h}.${v}`;
const snapshot = (v) => ({ feed: 'home', version: v, sections: [] });
const batch = (v) => ({ feed: 'home', from: v - 1, version: v, ops: [] });
const seen = (messages) => messages.filter((m) => m.type === 'event').map((m) => `${m.event}:${m.data.version ?? ''}`);
const tick = () => new Promise((resolve) => setImmediate(resolve));

test('tabs on one feed share one stream; a late tab gets the snapshot and the batches after it', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  const b = client('b');
  a({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  b({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  assert.equal(sources.length, 1);
  assert.equal(sources[0].url, '/feeds/home/events');
  sources[0].emit('snapshot', snapshot(3), id(3));
  sources[0].emit('batch', batch(4), id(4));
  const c = client('c');
  c({ type: 'subscribe', sub: 7, feed: 'home', version: null, id: null });
  assert.equal(sources.length, 1);
  assert.deepEqual(seen(inbox.a), ['snapshot:3', 'batch:4']);
  assert.deepEqual(seen(inbox.b), ['snapshot:3', 'batch:4']);
  assert.deepEqual(seen(inbox.c), ['snapshot:3', 'batch:4']);
  assert.ok(inbox.c.every((m) => m.sub === 7 && m.feed === 'home'));
});

test('a tab that rejoins gets only the batches it lacks; one that is ahead skips what it holds', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(1), id(1));
  for (let v = 2; v <= 5; v++) sources[0].emit('batch', batch(v), id(v));
  client('behind')({ type: 'subscribe', sub: 1, feed: 'home', version: 3, id: id(3) });
  assert.deepEqual(seen(inbox.behind), ['batch:4', 'batch:5']);
  client('ahead')({ type: 'subscribe', sub: 1, feed: 'home', version: 6, id: id(6) });
  sources[0].emit('batch', batch(6), id(6));
  sources[0].emit('batch', batch(7), id(7));
  assert.deepEqual(seen(inbox.ahead), ['batch:7']);
  assert.equal(sources.length, 1);
});

test('a new hub resumes from the oldest tab with the last event id, and each tab gets only what it lacks', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  const b = client('b');
  // Both subscribe before anything is open (a takeover): the stream resumes from the older one.
  a({ type: 'subscribe', sub: 1, feed: 'home', version: 8, id: id(8) });
  assert.equal(sources[0].url, `/feeds/home/events?lastEventId=${encodeURIComponent(id(8))}`);
  b({ type: 'subscribe', sub: 1, feed: 'home', version: 6, id: id(6) });
  assert.equal(sources.length, 2, 'b is older than the resume point: reopened from its id');
  assert.ok(sources[0].closed);
  assert.equal(sources[1].url, `/feeds/home/events?lastEventId=${encodeURIComponent(id(6))}`);
  for (let v = 7; v <= 9; v++) sources[1].emit('batch', batch(v), id(v));
  assert.deepEqual(seen(inbox.a), ['batch:9']);
  assert.deepEqual(seen(inbox.b), ['batch:7', 'batch:8', 'batch:9']);
});

test('a tab without a position joins a resumed stream: a fresh subscription brings everyone a snapshot', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: 4, id: id(4) });
  client('new')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  assert.equal(sources.length, 2);
  assert.equal(sources[1].url, '/feeds/home/events');
  sources[1].emit('snapshot', snapshot(4), id(4, 'bbbb'));
  assert.deepEqual(seen(inbox.a), ['snapshot:4']);
  assert.deepEqual(seen(inbox.new), ['snapshot:4']);
});

test('a tab of another history is not mistaken for one that is ahead', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(2), id(2, 'new'));
  client('old')({ type: 'subscribe', sub: 1, feed: 'home', version: 50, id: id(50, 'old') });
  assert.deepEqual(seen(inbox.old), ['snapshot:2']);
  sources[0].emit('batch', batch(3), id(3, 'new'));
  assert.deepEqual(seen(inbox.old), ['snapshot:2', 'batch:3']);
});

test('past the log limit the snapshot is dropped, and a new tab causes a fresh subscription', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(0), id(0));
  for (let v = 1; v <= HUB_LOG_LIMIT + 1; v++) sources[0].emit('batch', batch(v), id(v));
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: 1, id: id(1) });
  assert.equal(seen(inbox.b).length, HUB_LOG_LIMIT, 'b is caught up from the log');
  client('c')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  assert.equal(sources.length, 2);
  assert.equal(sources[1].url, '/feeds/home/events');
});

test('the log also keeps under its size limit, and keeps the last batch', () => {
  const { hub, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(0), id(0));
  const big = 'x'.repeat(HUB_LOG_CHARS / 4); // four of these batches are a little over the limit
  for (let v = 1; v <= 4; v++) sources[0].emit('batch', { ...batch(v), big }, id(v));
  const stream = hub.streams.get('home');
  assert.deepEqual(stream.log.map((b) => b.data.version), [2, 3, 4]);
  assert.ok(stream.logChars <= HUB_LOG_CHARS);
  assert.equal(stream.snapshot, null);
});

test('a tab that joins while the stream is down gets what the hub holds, then the state', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(2), id(2));
  sources[0].error(0);
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  assert.deepEqual(inbox.b.map((m) => m.event || m.state), ['snapshot', 'reconnecting']);
});

test('the last tab to leave a feed closes its stream; a client that goes away leaves all its feeds', () => {
  const { hub, client, sources } = setup();
  const a = client('a');
  a({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  a({ type: 'subscribe', sub: 2, feed: 'week', version: null, id: null });
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  a({ type: 'unsubscribe', sub: 1 });
  assert.ok(!sources[0].closed, 'b still shows home');
  hub.detach('a');
  assert.ok(sources[1].closed, 'nobody shows week');
  hub.detach('b');
  assert.ok(sources[0].closed);
  assert.equal(hub.streams.size, 0);
});

test('resync opens a fresh subscription; its snapshot goes to every tab', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  a({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(1), id(1));
  a({ type: 'resync', sub: 1 });
  assert.ok(sources[0].closed);
  assert.equal(sources[1].url, '/feeds/home/events');
  sources[0].emit('batch', batch(2), id(2)); // from the stream we left: ignored
  sources[1].emit('snapshot', snapshot(2), id(2));
  assert.deepEqual(seen(inbox.a), ['snapshot:1', 'snapshot:2']);
  assert.deepEqual(seen(inbox.b), ['snapshot:1', 'snapshot:2']);
});

test('an event that is not JSON: a fresh subscription, as the page always did', () => {
  const { inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(1), id(1));
  for (const l of sources[0].listeners.batch) l({ data: '{"from": 1, "vers', lastEventId: id(2) });
  assert.ok(sources[0].closed);
  assert.equal(sources[1].url, '/feeds/home/events');
  assert.deepEqual(seen(inbox.a), ['snapshot:1']);
});

test('a dropped stream reports reconnecting and EventSource retries by itself', () => {
  const { inbox, client, sources, timers } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].error(0);
  assert.deepEqual(inbox.a.filter((m) => m.type === 'state').map((m) => m.state), ['reconnecting']);
  assert.equal(timers.length, 0);
});

for (const [status, state] of [[404, 'error'], [401, 'unauthorized'], [403, 'forbidden'], [500, 'reconnecting']]) {
  test(`a refused stream whose feed answers ${status} shows ${state} and retries with backoff`, async () => {
    const { inbox, client, sources, timers } = setup(status);
    client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
    sources[0].error(2);
    await tick();
    const states = inbox.a.filter((m) => m.type === 'state');
    assert.equal(states.length, 1);
    assert.equal(states[0].state, state);
    if (status < 500) assert.equal(states[0].detail, `detail ${status}`);
    assert.deepEqual(timers.map((t) => t.ms), [2000]);
    timers[0].f();
    assert.equal(sources.length, 2);
    sources[1].error(2);
    await tick();
    assert.deepEqual(timers.map((t) => t.ms), [2000, 4000]);
    // A tab joining now learns the state at once.
    client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
    assert.equal(inbox.b[0].state, state);
  });
}

test('an expired stream (event: unauthorized) waits for a retry, then resumes from its last id', () => {
  const { inbox, client, sources, timers } = setup();
  const a = client('a');
  a({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(5), id(5));
  sources[0].emit('unauthorized', { feed: 'home' });
  assert.ok(sources[0].closed);
  assert.deepEqual(seen(inbox.a), ['snapshot:5', 'unauthorized:']);
  assert.equal(timers.length, 0, 'no retry without a fresh token');
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: 5, id: id(5) });
  assert.deepEqual(seen(inbox.b), ['unauthorized:']);
  a({ type: 'retry', sub: 1 });
  assert.equal(sources.length, 2);
  assert.equal(sources[1].url, `/feeds/home/events?lastEventId=${encodeURIComponent(id(5))}`);
  sources[1].emit('batch', batch(6), id(6));
  assert.deepEqual(seen(inbox.a), ['snapshot:5', 'unauthorized:', 'batch:6']);
});

test('a retry leaves an open stream alone', () => {
  const { client, sources } = setup();
  const a = client('a');
  a({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(1), id(1));
  a({ type: 'retry', sub: 1 });
  assert.equal(sources.length, 1);
});

test('a deleted feed ends the stream for every tab', () => {
  const { hub, inbox, client, sources } = setup();
  client('a')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  sources[0].emit('snapshot', snapshot(1), id(1));
  sources[0].emit('deleted', { feed: 'home' });
  assert.ok(sources[0].closed);
  assert.deepEqual(seen(inbox.a), ['snapshot:1', 'deleted:']);
  assert.equal(hub.streams.size, 0);
  client('b')({ type: 'subscribe', sub: 1, feed: 'home', version: null, id: null });
  assert.equal(sources.length, 2, 'a later tab opens a new stream');
});
