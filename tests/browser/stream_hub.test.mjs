// Unit tests of the StreamHub (Public/stream-hub.js) without a browser or a server: a fake EventSource,
// fetch and timers; `defer` runs at once at the end of each message (tick). Run with node --test
// (scripts/test.sh, and test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { StreamHub, HUB_LOG_LIMIT, HUB_LOG_CHARS, OUTAGE_GRACE_MS } = await importPublic('stream-hub.js');

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
  open() { this.readyState = 1; for (const l of this.listeners.open || []) l({}); }
  emit(type, data, id) { for (const l of this.listeners[type] || []) l({ data: JSON.stringify(data), lastEventId: id || '' }); }
  error(readyState) { this.readyState = readyState; for (const l of this.listeners.error || []) l({}); }
  get feeds() { return new URL(this.url, 'http://x').searchParams.getAll('feed'); }
}

/// A hub with fakes; `status` is what probing a refused stream answers; `timers` the delays asked for.
function setup(status = 200, options = {}) {
  FakeEventSource.all = [];
  const timers = [];
  const deferred = [];
  const hub = new StreamHub({
    EventSource: FakeEventSource,
    fetch: async (url) => ({ url, status, json: async () => ({ error: 'e', detail: `detail ${status}` }) }),
    setTimeout: (f, ms) => { timers.push({ f: () => { f(); flush(); }, ms }); return timers.length; },
    clearTimeout: () => {},
    defer: (f) => deferred.push(f),
    ...options,
  });
  const flush = () => { while (deferred.length) deferred.shift()(); };
  const inbox = {};
  const client = (name) => {
    inbox[name] ||= [];
    // Every message given is handled before the deferred work runs (as messages that arrive in one task).
    return (...messages) => { for (const m of messages) hub.handle(name, m, (answer) => inbox[name].push(answer)); flush(); };
  };
  return { hub, inbox, client, timers, flush, sources: FakeEventSource.all };
}

const H = 'aaaaaaaaaaaaaaaa';
const id = (feed, v, h = H) => `${feed}@ds1.${h}.${v}`;
const snapshot = (feed, v, h = H) => ({ feed, history: h, version: v, sections: [] });
const batch = (feed, v, h = H) => ({ feed, history: h, from: v - 1, version: v, ops: [] });
const sub = (feed, n = 1, at = null, h = H) => ({ type: 'subscribe', sub: n, feed, history: at === null ? null : h, version: at, id: at === null ? null : id(feed, at, h) });
const seen = (messages, feed = null) => messages.filter((m) => m.type === 'event' && (!feed || m.feed === feed)).map((m) => `${m.event}:${m.data.version ?? ''}`);
const states = (messages) => messages.filter((m) => m.type === 'state').map((m) => m.state);
const last = (sources) => sources[sources.length - 1];
const tick = () => new Promise((resolve) => setImmediate(resolve));

test('tabs on many feeds share ONE stream; a late tab gets the snapshot and the batches after it', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  a(sub('home'));
  client('b')(sub('home'));
  assert.equal(sources.length, 1);
  assert.equal(sources[0].url, '/events?feed=home');
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 3), id('home', 3));
  sources[0].emit('batch', batch('home', 4), id('home', 4));
  client('c')(sub('home', 7));
  assert.equal(sources.length, 1);
  for (const name of ['a', 'b', 'c']) assert.deepEqual(seen(inbox[name]), ['snapshot:3', 'batch:4']);
  assert.ok(inbox.c.every((m) => m.sub === 7 && m.feed === 'home'));
  assert.deepEqual(states(inbox.a), ['connecting', 'open']);
});

test('a tab adding a feed reconnects the stream with every position: the others resume, no resync', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  a(sub('home', 1));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 3), id('home', 3));
  a(sub('week', 2));
  assert.ok(sources[0].closed);
  assert.equal(sources[1].url, `/events?feed=home@${encodeURIComponent(`ds1.${H}.3`)}&feed=week`);
  sources[0].emit('batch', batch('home', 4), id('home', 4)); // from the stream we left: ignored
  sources[1].open();
  sources[1].emit('snapshot', snapshot('week', 1), id('week', 1));
  sources[1].emit('batch', batch('home', 4), id('home', 4));
  assert.deepEqual(seen(inbox.a, 'home'), ['snapshot:3', 'batch:4']);
  assert.deepEqual(seen(inbox.a, 'week'), ['snapshot:1']);
  // Dropping a feed reconnects without it, and the rest resume from where they stand.
  a({ type: 'unsubscribe', sub: 1 });
  assert.ok(sources[1].closed);
  assert.deepEqual(sources[2].feeds, [`week@ds1.${H}.1`]);
  assert.ok(!states(inbox.a).includes('retrying'), 'a planned reconnect is not a failure');
});

test('several subscriptions in one message burst open one stream', () => {
  const { hub, inbox, sources, flush } = setup();
  for (const [n, feed] of ['f1', 'f2', 'f3'].entries()) hub.handle('a', sub(feed, n), (m) => (inbox.a ||= []).push(m));
  flush();
  assert.equal(sources.length, 1);
  assert.deepEqual(sources[0].feeds, ['f1', 'f2', 'f3']);
});

test('the messages a tab sent in one task come as one: one stream for all its feeds', () => {
  const { client, sources } = setup();
  client('a')({ type: 'many', messages: [sub('f1', 1), sub('f2', 2), { type: 'unsubscribe', sub: 1 }, sub('f3', 3)] });
  assert.equal(sources.length, 1);
  assert.deepEqual(sources[0].feeds, ['f2', 'f3']);
});

test('a tab that rejoins gets only the batches it lacks; one that is ahead skips what it holds', () => {
  const { inbox, client, sources } = setup();
  client('a')(sub('home'));
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  for (let v = 2; v <= 5; v++) sources[0].emit('batch', batch('home', v), id('home', v));
  client('behind')(sub('home', 1, 3));
  assert.deepEqual(seen(inbox.behind), ['batch:4', 'batch:5']);
  client('ahead')(sub('home', 1, 6));
  sources[0].emit('batch', batch('home', 6), id('home', 6));
  sources[0].emit('batch', batch('home', 7), id('home', 7));
  assert.deepEqual(seen(inbox.ahead), ['batch:7']);
  assert.equal(sources.length, 1);
});

test('a new hub resumes each feed from the first tab position; a tab behind what the log holds moves it back', () => {
  const { inbox, client, sources } = setup();
  client('a')(sub('home', 1, 5));
  assert.deepEqual(sources[0].feeds, [`home@ds1.${H}.5`]);
  sources[0].emit('batch', batch('home', 6), id('home', 6));
  client('b')(sub('home', 1, 2)); // behind, and the log does not reach back: resume from 2
  assert.ok(sources[0].closed);
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.2`]);
  for (let v = 3; v <= 6; v++) sources[1].emit('batch', batch('home', v), id('home', v));
  assert.deepEqual(seen(inbox.a), ['batch:6'], 'a skips what it holds');
  assert.deepEqual(seen(inbox.b), ['batch:3', 'batch:4', 'batch:5', 'batch:6']);
  client('c')(sub('home', 1, 4, 'bbbbbbbbbbbbbbbb')); // another history: afresh
  assert.deepEqual(sources[2].feeds, ['home']);
});

test('the log keeps at most HUB_LOG_LIMIT batches and HUB_LOG_CHARS characters', () => {
  const { hub, inbox, client, sources } = setup();
  client('a')(sub('home'));
  sources[0].emit('snapshot', snapshot('home', 0), id('home', 0));
  for (let v = 1; v <= HUB_LOG_LIMIT + 1; v++) sources[0].emit('batch', batch('home', v), id('home', v));
  client('b')(sub('home', 1, 1));
  assert.equal(seen(inbox.b).length, HUB_LOG_LIMIT, 'b is caught up from the log');
  client('c')(sub('home'));
  assert.equal(sources.length, 2);
  assert.deepEqual(sources[1].feeds, ['home']);
  const big = 'x'.repeat(HUB_LOG_CHARS / 4);
  sources[1].emit('snapshot', snapshot('home', 0), id('home', 0));
  for (let v = 1; v <= 4; v++) sources[1].emit('batch', { ...batch('home', v), big }, id('home', v));
  const slot = hub.feeds.get('home');
  assert.deepEqual(slot.log.map((b) => b.data.version), [2, 3, 4]);
  assert.ok(slot.logChars <= HUB_LOG_CHARS);
  assert.equal(slot.snapshot, null);
});

test('a dropped stream is closed by the hub and reopened with every position, after a backoff', () => {
  const { inbox, client, sources, timers } = setup();
  const a = client('a');
  a(sub('home', 1), sub('week', 2));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 2), id('home', 2));
  sources[0].emit('snapshot', snapshot('week', 9), id('week', 9));
  sources[0].error(0); // the browser would reconnect with one Last-Event-ID: the hub does it instead
  assert.ok(sources[0].closed);
  assert.deepEqual(timers.map((t) => t.ms), [2000]);
  assert.deepEqual(states(inbox.a).slice(-2), ['retrying', 'retrying']);
  client('b')(sub('home'));
  assert.deepEqual(inbox.b.map((m) => m.event || m.state), ['snapshot', 'retrying'], 'a tab joining now gets what the hub holds, then the state');
  timers[0].f();
  assert.equal(sources.length, 2);
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.2`, `week@ds1.${H}.9`]);
  sources[1].error(0);
  assert.deepEqual(timers.map((t) => t.ms), [2000, 4000]);
  timers[1].f();
  sources[2].open();
  assert.deepEqual(states(inbox.a).slice(-2), ['open', 'open']);
  sources[2].error(0);
  assert.equal(timers[2].ms, 2000, 'an open stream resets the backoff');
});

test('notfound ends one feed and retries it with backoff; the others go on', () => {
  const { inbox, client, sources, timers } = setup();
  const a = client('a');
  a(sub('home', 1), sub('later', 2));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  sources[0].emit('notfound', { feed: 'later', error: 'not found', detail: 'no feed named later' });
  assert.deepEqual(seen(inbox.a, 'later'), ['notfound:']);
  assert.equal(inbox.a.filter((m) => m.feed === 'later' && m.type === 'state').pop().state, 'retrying');
  assert.deepEqual(timers.map((t) => t.ms), [2000]);
  sources[0].emit('batch', batch('home', 2), id('home', 2));
  assert.equal(sources.length, 1, 'the stream goes on for home');
  timers[0].f();
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.2`, 'later']);
  sources[1].emit('notfound', { feed: 'later' });
  assert.deepEqual(timers.map((t) => t.ms), [2000, 4000]);
  timers[1].f();
  sources[2].emit('snapshot', snapshot('later', 1), id('later', 1));
  assert.deepEqual(seen(inbox.a, 'later'), ['notfound:', 'notfound:', 'snapshot:1']);
  assert.deepEqual(seen(inbox.a, 'home'), ['snapshot:1', 'batch:2']);
});

test('the feeds that did not exist are asked for again in one stream', () => {
  const { client, sources, timers } = setup();
  client('a')(sub('home', 1), sub('x', 2), sub('y', 3));
  sources[0].emit('notfound', { feed: 'x' });
  sources[0].emit('notfound', { feed: 'y' });
  assert.deepEqual(timers.map((t) => t.ms), [2000, 2000]);
  timers[0].f();
  assert.equal(sources.length, 2);
  assert.deepEqual(sources[1].feeds, ['home', 'x', 'y']);
  timers[1].f(); // cleared by the first: nothing more to do
  assert.equal(sources.length, 2);
});

for (const [status, event] of [[404, 'notfound'], [401, 'unauthorized'], [403, 'forbidden']]) {
  test(`a stream refused with ${status} tells every feed ${event}`, async () => {
    const { inbox, client, sources, timers } = setup(status);
    const a = client('a');
    a(sub('home', 1), sub('week', 2));
    sources[0].error(2);
    await tick();
    assert.deepEqual(seen(inbox.a), [`${event}:`, `${event}:`]);
    assert.equal(inbox.a.find((m) => m.event === event).data.detail, `detail ${status}`);
    if (status === 404) {
      assert.deepEqual(timers.map((t) => t.ms), [2000, 2000], 'each feed is asked for again with backoff');
    } else {
      assert.deepEqual(timers, [], 'no retry without a new token');
      a({ type: 'retry', sub: 1 });
      assert.deepEqual(sources[1].feeds, ['home'], 'a retry asks again for that feed');
      a({ type: 'token', token: 'T' });
      assert.equal(sources[2].url, '/events?feed=home&feed=week&authorization=T', 'a new token asks again for every feed');
    }
  });
}

test('a stream refused for a reason the hub cannot tell (no server) retries with backoff', async () => {
  const { client, sources, timers } = setup(500);
  client('a')(sub('home'));
  sources[0].error(2);
  await tick();
  assert.deepEqual(timers.map((t) => t.ms), [2000]);
  timers[0].f();
  assert.equal(sources.length, 2);
});

test('forbidden and unauthorized inside the stream end that feed until a retry; a tab joining learns it', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  a(sub('home', 1), sub('secret', 2));
  sources[0].emit('forbidden', { feed: 'secret', error: 'forbidden' });
  client('b')(sub('secret'));
  assert.deepEqual(seen(inbox.b), ['forbidden:']);
  assert.deepEqual(states(inbox.b), ['closed']);
  sources[0].emit('unauthorized', { feed: 'home', error: 'token expired' });
  assert.equal(sources.length, 1);
  sources[0].error(0); // the server ends a stream with nothing left open: nothing to reconnect
  assert.equal(sources.length, 1);
  a({ type: 'retry', sub: 1 });
  assert.deepEqual(sources[1].feeds, ['home']);
});

test('resync asks one feed afresh; the others resume where they stand', () => {
  const { inbox, client, sources } = setup();
  const a = client('a');
  a(sub('home', 1), sub('week', 2));
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  sources[0].emit('snapshot', snapshot('week', 5), id('week', 5));
  client('b')(sub('home'));
  a({ type: 'resync', sub: 1 });
  assert.ok(sources[0].closed);
  assert.deepEqual(sources[1].feeds, ['home', `week@ds1.${H}.5`]);
  sources[1].emit('snapshot', snapshot('home', 2), id('home', 2));
  assert.deepEqual(seen(inbox.a, 'home'), ['snapshot:1', 'snapshot:2']);
  assert.deepEqual(seen(inbox.b, 'home'), ['snapshot:1', 'snapshot:2']);
});

test('an event that is not JSON reconnects every feed from its position', () => {
  const { inbox, client, sources, flush } = setup();
  client('a')(sub('home'));
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  for (const l of sources[0].listeners.batch) l({ data: '{"from": 1, "vers', lastEventId: id('home', 2) });
  flush();
  assert.ok(sources[0].closed);
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.1`]);
  assert.deepEqual(seen(inbox.a), ['snapshot:1']);
});

test('the last tab to leave a feed drops it from the stream; a client that goes away leaves all its feeds', () => {
  const { hub, client, sources, flush } = setup();
  const a = client('a');
  a(sub('home', 1), sub('week', 2));
  client('b')(sub('home', 1));
  a({ type: 'unsubscribe', sub: 1 });
  assert.equal(sources.length, 1, 'b still shows home');
  hub.detach('a');
  flush();
  assert.deepEqual(last(sources).feeds, ['home']);
  hub.detach('b');
  flush();
  assert.ok(last(sources).closed);
  assert.equal(hub.feeds.size, 0);
});

test('a deleted feed ends for every tab; a later tab opens it again', () => {
  const { hub, inbox, client, sources } = setup();
  client('a')(sub('home'));
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  sources[0].emit('deleted', { feed: 'home' });
  assert.deepEqual(seen(inbox.a), ['snapshot:1', 'deleted:']);
  assert.equal(hub.feeds.size, 0);
  client('b')(sub('home'));
  assert.deepEqual(last(sources).feeds, ['home']);
});

test('a base URL and a token go in the stream URL', () => {
  const { client, sources } = setup(200, { baseURL: 'https://feeds.example/', token: 'a b' });
  client('a')(sub('home'));
  assert.equal(sources[0].url, 'https://feeds.example/events?feed=home&authorization=a%20b');
});

const outage = (messages) => messages.filter((m) => m.type === 'event' && (m.event === 'unavailable' || m.event === 'available')).map((m) => `${m.event}:${m.data.detail ?? ''}`);

test('unavailable and available reach every tab once each way; the position and the others are untouched', () => {
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home'), sub('week', 2));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 3), id('home', 3));
  sources[0].emit('snapshot', snapshot('week', 5), id('week', 5));
  sources[0].emit('unavailable', { feed: 'home', detail: 'redis down' }); // no id
  sources[0].emit('unavailable', { feed: 'home', detail: 'redis down' });
  assert.deepEqual(outage(inbox.a), ['unavailable:redis down']);
  assert.ok(inbox.a.filter((m) => m.event === 'unavailable').every((m) => m.feed === 'home' && m.id === null));
  // A tab that joins during the outage gets the last state, then the outage.
  client('b')(sub('home', 9));
  assert.deepEqual(inbox.b.filter((m) => m.type === 'event').map((m) => m.event), ['snapshot', 'unavailable']);
  assert.equal(sources.length, 1, 'no reconnect for an outage');
  sources[0].emit('available', { feed: 'home' });
  sources[0].emit('available', { feed: 'home' });
  sources[0].emit('batch', batch('home', 4), id('home', 4)); // what it missed follows
  for (const name of ['a', 'b']) assert.deepEqual(outage(inbox[name]), ['unavailable:redis down', 'available:'], name);
  assert.deepEqual(seen(inbox.a, 'home'), ['snapshot:3', 'unavailable:', 'available:', 'batch:4']);
  assert.deepEqual(seen(inbox.a, 'week'), ['snapshot:5']);
  // A reconnect resumes from the last batch: the outage events moved nothing.
  sources[0].error(0);
  timers[timers.length - 1].f();
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.4`, `week@ds1.${H}.5`]);
});

test('after a reconnect an outage said again goes on quietly; one not said within the grace is over', () => {
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home'));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 3), id('home', 3));
  sources[0].emit('unavailable', { feed: 'home', detail: 'redis down' });
  const newTimer = (action) => { const before = timers.length; action(); assert.equal(timers.length, before + 1); return timers[before]; };
  newTimer(() => sources[0].error(0)).f(); // the reconnect
  assert.deepEqual(sources[1].feeds, [`home@ds1.${H}.3`], 'the position is the last snapshot\'s');
  const grace = newTimer(() => sources[1].open()); // the new stream must say it again within the grace
  assert.equal(grace.ms, OUTAGE_GRACE_MS);
  sources[1].emit('unavailable', { feed: 'home', detail: 'redis down' });
  grace.f();
  assert.deepEqual(outage(inbox.a), ['unavailable:redis down'], 'said again: no available, no second unavailable');
  // The store came back while the stream was down: the next stream does not say it.
  newTimer(() => sources[1].error(0)).f();
  const grace2 = newTimer(() => sources[2].open());
  sources[2].emit('batch', batch('home', 4), id('home', 4));
  assert.deepEqual(outage(inbox.a), ['unavailable:redis down']);
  grace2.f();
  assert.deepEqual(outage(inbox.a), ['unavailable:redis down', 'available:']);
});

test('a tab that was told of an outage by another hub hears its end from the new one', () => {
  const { inbox, client, sources, timers } = setup();
  client('a')({ ...sub('home', 1, 3), stale: true });
  sources[0].open();
  assert.deepEqual(outage(inbox.a), [], 'not told twice');
  timers.find((t) => t.ms === OUTAGE_GRACE_MS).f();
  assert.deepEqual(outage(inbox.a), ['available:']);
});

test('a deleted feed ends its outage without an available', () => {
  const { inbox, client, sources } = setup();
  client('a')(sub('home'));
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 3), id('home', 3));
  sources[0].emit('unavailable', { feed: 'home', detail: 'x' });
  sources[0].emit('deleted', { feed: 'home' });
  assert.deepEqual(seen(inbox.a), ['snapshot:3', 'unavailable:', 'deleted:']);
});
