// Node tests of how the hub tells its feeds that the server gives no answer (issue 50): a page whose
// server is down, or on another origin without `--allow-origin` (a CORS refusal reaches a page as a
// plain network error: the EventSource fails without opening, and so does the fetch that probes it),
// must not show `connecting` for ever. After UNREACHABLE_AFTER tries in a row with no answer the feeds
// are `unreachable`; the hub goes on trying, and the first answer ends it. Also the words the page
// gets (`unreachableDetail`), which name `--allow-origin` when the origins differ. A fake EventSource,
// fetch and timers, as in stream_hub.test.mjs. Run with `node --test checks/browser/*.test.mjs`.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { StreamHub, UNREACHABLE_AFTER, RETRY_FIRST_MS } = await importPublic('stream-hub.js');
const { unreachableDetail } = await importPublic('diffstream-protocol.js');

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
  /// readyState 2: the browser gave up (a status, or a CORS refusal); 0: it would try again (a network error).
  error(readyState) { this.readyState = readyState; for (const l of this.listeners.error || []) l({}); }
}

/// A hub whose probe (`fetch`) answers what `answer()` says: a status, or a rejection (no answer).
function setup(answer = () => { throw new TypeError('Failed to fetch'); }, options = {}) {
  FakeEventSource.all = [];
  const timers = [];
  const deferred = [];
  const hub = new StreamHub({
    EventSource: FakeEventSource,
    fetch: async (url) => { const status = answer(); return { url, status, json: async () => ({ error: 'e', detail: `detail ${status}` }) }; },
    setTimeout: (f, ms) => { timers.push({ f: () => { f(); flush(); }, ms }); return timers.length; },
    clearTimeout: () => {},
    defer: (f) => deferred.push(f),
    ...options,
  });
  const flush = () => { while (deferred.length) deferred.shift()(); };
  const inbox = {};
  const client = (name) => {
    inbox[name] ||= [];
    return (...messages) => { for (const m of messages) hub.handle(name, m, (reply) => inbox[name].push(reply)); flush(); };
  };
  return { hub, inbox, client, timers, sources: FakeEventSource.all };
}

const sub = (feed, n = 1) => ({ type: 'subscribe', sub: n, feed, history: null, version: null, id: null });
const states = (messages, feed = null) => messages.filter((m) => m.type === 'state' && (!feed || m.feed === feed)).map((m) => m.state);
const last = (sources) => sources[sources.length - 1];
const tick = () => new Promise((resolve) => setImmediate(resolve));

/// The stream's next try fails as a refusal by CORS does in Chromium: error with readyState CLOSED, and
/// the probe's fetch rejects. Then the reconnect is due (its timer runs).
async function refusedByCORS(sources, timers) {
  last(sources).error(2);
  await tick();
  return timers[timers.length - 1];
}

test('a server that never answers (CORS, or down): unreachable after a few tries, and it goes on trying', async () => {
  assert.equal(UNREACHABLE_AFTER, 3);
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home', 1), sub('week', 2));
  for (let n = 1; n < UNREACHABLE_AFTER; n++) {
    (await refusedByCORS(sources, timers)).f();
    assert.deepEqual(states(inbox.a, 'home'), ['connecting', 'retrying'], `still retrying after ${n} tries`);
  }
  await refusedByCORS(sources, timers);
  assert.deepEqual(states(inbox.a, 'home'), ['connecting', 'retrying', 'unreachable']);
  assert.deepEqual(states(inbox.a, 'week'), ['connecting', 'retrying', 'unreachable'], 'every feed of the stream is told');
  // It goes on trying with the usual backoff, saying nothing more while nothing changes.
  assert.deepEqual(timers.map((t) => t.ms), [RETRY_FIRST_MS, 2 * RETRY_FIRST_MS, 4 * RETRY_FIRST_MS]);
  timers[timers.length - 1].f();
  for (let n = 0; n < 3; n++) (await refusedByCORS(sources, timers)).f();
  assert.equal(sources.length, UNREACHABLE_AFTER + 4, 'a try after each failure');
  assert.deepEqual(states(inbox.a, 'home'), ['connecting', 'retrying', 'unreachable']);
  // The server is reachable again (say it was restarted with --allow-origin): the stream opens.
  last(sources).open();
  last(sources).emit('snapshot', { feed: 'home', history: 'h', version: 1, sections: [] }, 'home@ds1.h.1');
  assert.deepEqual(states(inbox.a, 'home'), ['connecting', 'retrying', 'unreachable', 'open']);
});

test('network errors before any answer count the same (the browser would retry by itself)', async () => {
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home'));
  for (let n = 0; n < UNREACHABLE_AFTER; n++) {
    last(sources).error(0);
    timers[timers.length - 1].f();
  }
  assert.deepEqual(states(inbox.a), ['connecting', 'retrying', 'unreachable']);
  assert.equal(sources.length, UNREACHABLE_AFTER + 1, 'and it tries again');
});

test('a stream that was open and dropped is retrying; unreachable only after as many tries with no answer', async () => {
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home'));
  sources[0].open();
  sources[0].error(0); // the stream dropped: the server had answered
  assert.deepEqual(states(inbox.a), ['connecting', 'open', 'retrying']);
  for (let n = 1; n < UNREACHABLE_AFTER; n++) {
    timers[timers.length - 1].f();
    last(sources).error(0);
  }
  assert.deepEqual(states(inbox.a), ['connecting', 'open', 'retrying'], `${UNREACHABLE_AFTER - 1} tries with no answer`);
  timers[timers.length - 1].f();
  last(sources).error(0);
  assert.deepEqual(states(inbox.a), ['connecting', 'open', 'retrying', 'unreachable']);
});

test('a server that answers with a status is reachable: retrying, never unreachable; an answer ends unreachable', async () => {
  let status = 503; // null: no answer (the probe's fetch rejects)
  const { inbox, client, sources, timers } = setup(() => { if (status === null) throw new TypeError('Failed to fetch'); return status; });
  client('a')(sub('home'));
  for (let n = 0; n < UNREACHABLE_AFTER + 2; n++) (await refusedByCORS(sources, timers)).f();
  assert.deepEqual(states(inbox.a), ['connecting', 'retrying'], 'a 503 is an answer');
  status = null;
  for (let n = 0; n < UNREACHABLE_AFTER; n++) (await refusedByCORS(sources, timers)).f();
  assert.deepEqual(states(inbox.a), ['connecting', 'retrying', 'unreachable']);
  status = 503; // the server answers again, still refusing the stream for now
  await refusedByCORS(sources, timers);
  assert.deepEqual(states(inbox.a), ['connecting', 'retrying', 'unreachable', 'retrying']);
});

test('a refusal with a status (404, 401, 403) after no answers says the refusal, not unreachable', async () => {
  let status = null; // no answer (the probe's fetch rejects)
  const { inbox, client, sources, timers } = setup(() => { if (status === null) throw new TypeError('Failed to fetch'); return status; });
  client('a')(sub('home'));
  for (let n = 0; n < UNREACHABLE_AFTER; n++) (await refusedByCORS(sources, timers)).f();
  assert.equal(states(inbox.a).pop(), 'unreachable');
  status = 403;
  await refusedByCORS(sources, timers);
  assert.deepEqual(inbox.a.filter((m) => m.type === 'event').map((m) => m.event), ['forbidden']);
  assert.equal(states(inbox.a).pop(), 'closed');
});

test('a tab that joins a feed of an unreachable server is told so at once', async () => {
  const { inbox, client, sources, timers } = setup();
  client('a')(sub('home'));
  for (let n = 0; n < UNREACHABLE_AFTER; n++) (await refusedByCORS(sources, timers)).f();
  client('b')(sub('home'));
  assert.deepEqual(states(inbox.b), ['unreachable']);
});

test('unreachableDetail names --allow-origin and the page\'s origin only when the origins differ', () => {
  const same = unreachableDetail('http://127.0.0.1:8080', 'http://127.0.0.1:8080');
  assert.match(same, /^no answer from the DiffStream server at http:\/\/127\.0\.0\.1:8080 /);
  assert.match(same, /still trying/);
  assert.doesNotMatch(same, /allow-origin/);
  assert.equal(unreachableDetail('http://127.0.0.1:8080'), same, 'no page origin: the same words');
  const other = unreachableDetail('http://127.0.0.1:8080', 'http://127.0.0.1:8070');
  assert.match(other, /--allow-origin http:\/\/127\.0\.0\.1:8070/);
  assert.match(other, /this page's origin http:\/\/127\.0\.0\.1:8070/);
  assert.match(other, /CORS/);
  assert.match(other, /still trying/);
});
