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
    // A hub never has one feed in two open streams (even for a moment: it closes before it opens).
    const named = (source) => source.feeds.map((p) => p.split('@')[0]);
    for (const other of FakeEventSource.all) {
      if (!other.closed && named(other).some((feed) => named(this).includes(feed))) throw new Error(`${url} lists a feed that ${other.url} carries`);
    }
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

test('a hub given a presence id sends it with every stream it opens, so a reopen is the same present user', () => {
  const { client, sources } = setup(200, { presenceID: '0123456789abcdef0123456789abcdef' });
  const a = client('a');
  a(sub('home'));
  sources[0].open();
  a(sub('week'));
  assert.ok(sources[0].closed);
  for (const source of sources) assert.ok(source.url.endsWith('&presence-id=0123456789abcdef0123456789abcdef'), source.url);
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

test('a stream refused whole with each feed\'s refusal tells each its own: the missing one is retried', async () => {
  const body = { error: 'forbidden', detail: 'd', feeds: [
    { feed: 'theirs', event: 'forbidden', error: 'forbidden', detail: 'not yours' },
    { feed: 'later', event: 'notfound', error: 'not found', detail: 'no feed named later' }] };
  const { inbox, client, sources, timers } = setup(403, { fetch: async (url) => ({ url, status: 403, json: async () => body }) });
  const a = client('a');
  a(sub('theirs', 1), sub('later', 2));
  sources[0].error(2);
  await tick();
  assert.deepEqual(seen(inbox.a, 'theirs'), ['forbidden:']);
  assert.deepEqual(seen(inbox.a, 'later'), ['notfound:']);
  assert.equal(inbox.a.find((m) => m.feed === 'later' && m.event === 'notfound').data.detail, 'no feed named later');
  assert.deepEqual(timers.map((t) => t.ms), [2000], 'only the missing feed is asked for again');
  timers[0].f();
  assert.deepEqual(last(sources).feeds, ['later']);
});

test('a stream refused whole where a feed could not be loaded (Redis) is tried again', async () => {
  const body = { error: 'redis unavailable', detail: 'd', feeds: [{ feed: 'home', event: 'unavailable', error: 'redis unavailable', detail: 'd' }] };
  const { inbox, client, sources, timers } = setup(503, { fetch: async (url) => ({ url, status: 503, json: async () => body }) });
  client('a')(sub('home'));
  sources[0].error(2);
  await tick();
  assert.deepEqual(seen(inbox.a), []);
  assert.deepEqual(timers.map((t) => t.ms), [2000]);
});

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

test('an invalid feed name is refused to its subscription only and never listed; the other feeds go on', () => {
  const { hub, inbox, client, sources } = setup();
  const a = client('a');
  a(sub('home', 1), sub('bad name', 2), sub('.hidden', 3), sub('week', 4));
  assert.equal(sources.length, 1);
  assert.deepEqual(sources[0].feeds, ['home', 'week']);
  for (const n of [2, 3]) {
    const told = inbox.a.filter((m) => m.sub === n);
    assert.equal(told.length, 1);
    assert.equal(told[0].type, 'state');
    assert.equal(told[0].state, 'closed');
    assert.equal(told[0].status, 400);
    assert.match(told[0].detail, /is not a feed id/);
  }
  assert.deepEqual([...hub.feeds.keys()], ['home', 'week']);
  sources[0].open();
  sources[0].emit('snapshot', snapshot('home', 1), id('home', 1));
  sources[0].emit('snapshot', snapshot('week', 1), id('week', 1));
  assert.deepEqual(seen(inbox.a), ['snapshot:1', 'snapshot:1']);
  // A retry, a resync or an unsubscribe of the refused subscription changes nothing.
  a({ type: 'retry', sub: 2 }, { type: 'resync', sub: 2 }, { type: 'unsubscribe', sub: 3 });
  assert.equal(sources.length, 1);
  assert.ok(!sources[0].closed);
  assert.ok(!inbox.a.some((m) => m.sub !== 2 && m.sub !== 3 && m.state === 'closed'));
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

// ---- More feeds than one stream takes (maxStreamFeeds, the server's --max-stream-feeds) ---------------

const names = (n, prefix = 'f') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const subscribeAll = (feeds, first = 1) => ({ type: 'many', messages: feeds.map((feed, i) => sub(feed, first + i)) });
const open = (sources) => sources.filter((s) => !s.closed);
const feedOf = (param) => param.split('@')[0];
/// Opens a source and sends each feed it lists without a position a snapshot at `v` (one with a position is current).
const serve = (source, v = 1) => { source.open(); for (const feed of source.feeds.filter((p) => !p.includes('@'))) source.emit('snapshot', snapshot(feed, v), id(feed, v)); };

test('250 feeds with maxStreamFeeds 100 open 3 streams of at most 100, each feed in one, each gets its snapshot', () => {
  const opened = [];
  const { inbox, client, sources } = setup(200, { maxStreamFeeds: 100, onOpen: (url) => opened.push(url) });
  const feeds = names(250);
  client('a')(subscribeAll(feeds));
  assert.equal(sources.length, 3);
  assert.deepEqual(sources.map((s) => s.feeds.length), [100, 100, 50]);
  assert.deepEqual(sources.flatMap((s) => s.feeds).sort(), [...feeds].sort(), 'every feed in exactly one stream');
  assert.deepEqual(opened, sources.map((s) => s.url), 'onOpen once per stream');
  for (const source of sources) serve(source, 3);
  for (const feed of feeds) assert.deepEqual(seen(inbox.a, feed), ['snapshot:3'], feed);
  assert.ok(feeds.every((feed) => inbox.a.filter((m) => m.feed === feed && m.type === 'state').pop().state === 'open'));
});

test('dropping or adding a feed reconnects only the stream it is in; a stream whose feeds all left is closed', () => {
  const opened = [];
  const { hub, inbox, client, sources } = setup(200, { maxStreamFeeds: 3, onOpen: (url) => opened.push(url) });
  const a = client('a');
  a(subscribeAll(names(7))); // [f0 f1 f2] [f3 f4 f5] [f6]
  assert.deepEqual(sources.map((s) => s.feeds), [['f0', 'f1', 'f2'], ['f3', 'f4', 'f5'], ['f6']]);
  for (const source of sources) serve(source, 2);
  const [first, second, third] = sources;
  a({ type: 'unsubscribe', sub: 5 }); // f4
  assert.equal(sources.length, 4);
  assert.ok(second.closed && !first.closed && !third.closed, 'only f4\'s stream reconnects');
  assert.deepEqual(sources[3].feeds, [`f3@ds1.${H}.2`, `f5@ds1.${H}.2`], 'its other feeds resume from their positions');
  assert.equal(opened.length, 4);
  second.emit('batch', batch('f3', 3), id('f3', 3)); // from the stream we closed: ignored
  assert.deepEqual(seen(inbox.a, 'f3'), ['snapshot:2']);
  // A new feed goes in the first stream with room (the one f4 left), and only that one reconnects.
  a(sub('g', 20));
  assert.equal(sources.length, 5);
  assert.deepEqual(sources[4].feeds, [`f3@ds1.${H}.2`, `f5@ds1.${H}.2`, 'g']);
  assert.ok(!first.closed && !third.closed);
  // A feed dropped and another added in one task: one reconnect.
  a({ type: 'many', messages: [{ type: 'unsubscribe', sub: 1 }, sub('h', 21)] });
  assert.equal(sources.length, 6);
  assert.ok(first.closed);
  assert.deepEqual(sources[5].feeds, [`f1@ds1.${H}.2`, `f2@ds1.${H}.2`, 'h']);
  // The last feed of a stream leaves: that stream is closed, nothing reopens.
  a({ type: 'unsubscribe', sub: 7 }); // f6
  assert.ok(third.closed);
  assert.equal(sources.length, 6);
  assert.equal(hub.streams.length, 2);
  assert.deepEqual(open(sources).map((s) => s.feeds.map(feedOf)), [['f3', 'f5', 'g'], ['f1', 'f2', 'h']]);
  assert.ok(!states(inbox.a).includes('retrying'), 'a planned reconnect is not a failure');
});

test('one stream failing leaves the others open; its feeds resume from their positions after its own backoff', () => {
  const { inbox, client, sources, timers } = setup(200, { maxStreamFeeds: 2 });
  client('a')(subscribeAll(names(5))); // [f0 f1] [f2 f3] [f4]
  for (const source of sources) serve(source, 4);
  const stateOf = (feed) => inbox.a.filter((m) => m.feed === feed && m.type === 'state').map((m) => m.state);
  sources[1].error(0);
  assert.deepEqual(stateOf('f2'), ['connecting', 'open', 'retrying']);
  for (const feed of ['f0', 'f1', 'f4']) assert.deepEqual(stateOf(feed), ['connecting', 'open'], feed);
  assert.equal(open(sources).length, 2);
  sources[0].emit('batch', batch('f0', 5), id('f0', 5)); // the others go on
  assert.deepEqual(seen(inbox.a, 'f0'), ['snapshot:4', 'batch:5']);
  assert.deepEqual(timers.map((t) => t.ms), [2000]);
  timers[0].f();
  assert.equal(sources.length, 4);
  assert.deepEqual(sources[3].feeds, [`f2@ds1.${H}.4`, `f3@ds1.${H}.4`]);
  sources[3].error(0);
  assert.deepEqual(timers.map((t) => t.ms), [2000, 4000], 'the failing stream backs off');
  sources[2].error(0);
  assert.deepEqual(timers.map((t) => t.ms), [2000, 4000, 2000], 'each stream has its own backoff');
  timers[1].f();
  sources[4].open();
  sources[4].emit('batch', batch('f2', 5), id('f2', 5));
  assert.deepEqual(seen(inbox.a, 'f2'), ['snapshot:4', 'batch:5']);
  assert.deepEqual(stateOf('f2'), ['connecting', 'open', 'retrying', 'open']);
  assert.equal(stateOf('f0').pop(), 'open');
  // A tab's retry reconnects now the failed stream of its feed, and only that one.
  client('a')({ type: 'retry', sub: 5 }); // f4
  assert.equal(sources.length, 6);
  assert.deepEqual(sources[5].feeds, [`f4@ds1.${H}.4`]);
  assert.ok(!sources[0].closed && !sources[4].closed);
});

test('a stream refused with a status ends its own feeds only; resync reconnects only its stream; a token every stream', async () => {
  const { inbox, client, sources } = setup(401, { maxStreamFeeds: 2 });
  const a = client('a');
  a(subscribeAll(names(4))); // [f0 f1] [f2 f3]
  serve(sources[0], 1);
  sources[1].error(2);
  await tick();
  assert.deepEqual(seen(inbox.a, 'f2'), ['unauthorized:']);
  assert.deepEqual(seen(inbox.a, 'f1'), ['snapshot:1']);
  assert.equal(inbox.a.filter((m) => m.feed === 'f0' && m.type === 'state').pop().state, 'open');
  assert.equal(sources.length, 2);
  a({ type: 'resync', sub: 2 }); // f1 afresh: only its stream
  assert.equal(sources.length, 3);
  assert.deepEqual(sources[2].feeds, [`f0@ds1.${H}.1`, 'f1']);
  a({ type: 'token', token: 'T' }); // f2 and f3 asked again; every stream gets the token
  assert.deepEqual(open(sources).map((s) => s.url.endsWith('authorization=T')), [true, true]);
  assert.deepEqual(open(sources).map((s) => s.feeds.map(feedOf)), [['f0', 'f1'], ['f2', 'f3']]);
});

test('a server that takes fewer feeds than maxStreamFeeds: the hub splits again with the limit its 400 names', async () => {
  const refusal = { error: 'too many feeds', detail: 'at most 3 feeds per stream (--max-stream-feeds)', limit: 'max-stream-feeds', value: 3 };
  const fetch = async (url) => {
    const count = new URL(url, 'http://x').searchParams.getAll('feed').length;
    return count > 3 ? { status: 400, json: async () => refusal } : { status: 200, json: async () => ({}) };
  };
  const { hub, inbox, client, sources, flush } = setup(200, { maxStreamFeeds: 4, fetch });
  client('a')(subscribeAll(names(6))); // [f0 f1 f2 f3] [f4 f5]
  serve(sources[1], 7);
  sources[0].error(2); // the server answers 400
  await tick();
  flush(); // the hub's deferred sync
  assert.equal(hub.maxStreamFeeds, 3);
  assert.ok(sources[1].closed, 'the stream with room takes the feed that moved');
  assert.deepEqual(open(sources).map((s) => s.feeds), [['f0', 'f1', 'f2'], [`f4@ds1.${H}.7`, `f5@ds1.${H}.7`, 'f3']]);
  for (const source of open(sources)) serve(source, 7);
  for (const feed of names(6)) assert.deepEqual(seen(inbox.a, feed), ['snapshot:7'], feed);
  assert.ok(!inbox.a.some((m) => m.state === 'closed'));
});

test('a 400 the hub cannot fix closes that stream\'s feeds only', async () => {
  const { inbox, client, sources } = setup(400, { maxStreamFeeds: 2 });
  client('a')(subscribeAll(names(3))); // [f0 f1] [f2]
  serve(sources[0], 1);
  sources[1].error(2);
  await tick();
  const last = (feed) => inbox.a.filter((m) => m.feed === feed && m.type === 'state').pop();
  assert.equal(last('f2').state, 'closed');
  assert.equal(last('f2').detail, 'detail 400');
  assert.equal(last('f0').state, 'open');
  assert.equal(sources.length, 2);
});

test('a feed dropped and subscribed again in one task may move to another stream, never in two at once', () => {
  const { inbox, client, sources } = setup(200, { maxStreamFeeds: 2 });
  const a = client('a');
  a(subscribeAll(names(4))); // [f0 f1] [f2 f3]
  for (const source of sources) serve(source, 1);
  a({ type: 'unsubscribe', sub: 2 }); // f1: the first stream has room
  assert.deepEqual(last(sources).feeds, [`f0@ds1.${H}.1`]);
  a({ type: 'many', messages: [{ type: 'unsubscribe', sub: 3 }, sub('f2', 9)] }); // f2 left, then is a new feed
  assert.deepEqual(open(sources).map((s) => s.feeds), [[`f0@ds1.${H}.1`, 'f2'], [`f3@ds1.${H}.1`]]);
  last(sources).open();
  sources[1].emit('batch', batch('f2', 2), id('f2', 2)); // the stream f2 left: ignored
  assert.deepEqual(seen(inbox.a, 'f2'), ['snapshot:1']);
});

test('a new feed goes in a stream with room that is not waiting out a backoff', () => {
  const { client, sources, timers } = setup(200, { maxStreamFeeds: 2 });
  const a = client('a');
  a(subscribeAll(names(4))); // [f0 f1] [f2 f3]
  a({ type: 'many', messages: [{ type: 'unsubscribe', sub: 2 }, { type: 'unsubscribe', sub: 4 }] }); // [f0] [f2]
  const [first, second] = open(sources);
  first.error(0); // f0's stream waits 2 s
  a(sub('g', 9));
  assert.ok(second.closed, 'the healthy stream reconnects with g');
  assert.deepEqual(last(sources).feeds, ['f2', 'g']);
  timers[0].f();
  assert.deepEqual(last(sources).feeds, ['f0']);
  assert.equal(open(sources).length, 2);
});
