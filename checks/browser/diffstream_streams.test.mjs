// Node tests of the tab side of the connection (Public/diffstream-streams.js) without a browser:
// - chooseMode, where the hub runs ('worker', 'tab', 'own') from what the browser has, with fake globals;
// - openStreams in 'own' mode (a hub in the page) over a fake EventSource: the
//   API it returns, one stream for the feeds of one task, the position kept, an invalid name refused.
// The other modes run in Chromium (test_diffstream_streams.py, test_tabs.py).
// Run: node --test checks/browser/ (scripts/test.sh; test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { chooseMode, MODES, openStreams } = await importPublic('diffstream-streams.js');

class SharedWorker {}
class BroadcastChannel {}
const locks = { request() {} };
const browser = { SharedWorker, BroadcastChannel, navigator: { locks } }; // a secure context with every API
const insecure = { SharedWorker, BroadcastChannel, navigator: {} };       // no Web Locks over plain http
const bare = {};

test('chooseMode: the best the browser has by default: worker, then elected tab, then own', () => {
  assert.deepEqual(MODES, ['worker', 'tab', 'own']);
  assert.deepEqual(chooseMode(undefined, { scope: browser }), { mode: 'worker', available: { worker: true, tab: true, own: true } });
  assert.equal(chooseMode(undefined, { scope: { BroadcastChannel, navigator: { locks } } }).mode, 'tab');
  assert.equal(chooseMode(undefined, { scope: insecure }).mode, 'worker');
  assert.deepEqual(chooseMode(undefined, { scope: { BroadcastChannel, navigator: {} } }), { mode: 'own', available: { worker: false, tab: false, own: true } });
  assert.equal(chooseMode(undefined, { scope: bare }).mode, 'own');
});

test('chooseMode: a requested mode when the browser has it, else the default', () => {
  for (const mode of MODES) assert.equal(chooseMode(mode, { scope: browser }).mode, mode);
  assert.equal(chooseMode('tab', { scope: insecure }).mode, 'worker'); // no Web Locks: no election
  assert.equal(chooseMode('worker', { scope: { BroadcastChannel, navigator: { locks } } }).mode, 'tab');
  assert.equal(chooseMode('own', { scope: bare }).mode, 'own');
});

test('chooseMode: an unknown mode is the default, also a name every object has', () => {
  assert.equal(chooseMode('shared', { scope: browser }).mode, 'worker');
  assert.equal(chooseMode('constructor', { scope: bare }).mode, 'own');
  assert.equal(chooseMode('', { scope: insecure }).mode, 'worker');
});

test('chooseMode: a server on another origin is always own', () => {
  for (const requested of [undefined, ...MODES]) {
    assert.deepEqual(chooseMode(requested, { foreign: true, scope: browser }), { mode: 'own', available: { worker: false, tab: false, own: true } });
  }
});

test('chooseMode: a shared worker that did not start leaves the elected tab, or own', () => {
  assert.equal(chooseMode(undefined, { failed: ['worker'], scope: browser }).mode, 'tab');
  assert.equal(chooseMode('worker', { failed: ['worker'], scope: browser }).mode, 'tab');
  assert.equal(chooseMode(undefined, { failed: ['worker'], scope: insecure }).mode, 'own');
});

test('chooseMode: the page\'s own globals by default', () => {
  const expected = typeof globalThis.SharedWorker === 'function' ? 'worker'
    : typeof globalThis.BroadcastChannel === 'function' && globalThis.navigator && globalThis.navigator.locks ? 'tab' : 'own';
  assert.equal(chooseMode().mode, expected);
});

// ---- openStreams in 'own' mode ----------------------------------------------------------------------

class FakeEventSource {
  constructor(url) { this.url = url; this.listeners = {}; this.closed = false; FakeEventSource.all.push(this); }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
  close() { this.closed = true; }
  open() { for (const l of this.listeners.open || []) l({}); }
  emit(type, data, id) { for (const l of this.listeners[type] || []) l({ data: JSON.stringify(data), lastEventId: id || '' }); }
}

/// Runs `body` with the globals a page would have (location, document's cookie, EventSource), put back after.
async function inPage(body) {
  const saved = { location: globalThis.location, document: globalThis.document, EventSource: globalThis.EventSource };
  FakeEventSource.all = [];
  Object.assign(globalThis, { location: new URL('http://localhost:8080/page.html'), document: { cookie: '' }, EventSource: FakeEventSource });
  try {
    await body();
  } finally {
    for (const [name, value] of Object.entries(saved)) { if (value === undefined) delete globalThis[name]; else globalThis[name] = value; }
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const H = 'aaaaaaaaaaaaaaaa';

test('openStreams (own): the API, one stream for a task\'s feeds, events to each listener', () => inPage(async () => {
  const streams = openStreams({ mode: 'own' });
  assert.equal(streams.mode, 'own');
  assert.equal(streams.leading, true);
  assert.match(streams.tabId, /^[0-9a-z]+$/);
  const { subscribe } = streams; // the API's parts work taken apart
  const got = { home: [], news: [] };
  const home = subscribe('home', (event) => got.home.push(event));
  subscribe('news', (event) => got.news.push(event));
  await settle();
  assert.equal(FakeEventSource.all.length, 1);
  assert.equal(FakeEventSource.all[0].url, '/events?feed=home&feed=news');
  const source = FakeEventSource.all[0];
  source.open();
  source.emit('snapshot', { feed: 'home', history: H, version: 3, sections: [] }, `home@ds1.${H}.3`);
  source.emit('batch', { feed: 'home', history: H, from: 3, version: 4, ops: [] }, `home@ds1.${H}.4`);
  await settle();
  assert.deepEqual(got.home.map((e) => e.type === 'state' ? `state:${e.state}` : `${e.type}:${e.data.version}`), ['state:connecting', 'state:open', 'snapshot:3', 'batch:4']);
  assert.deepEqual(got.news.map((e) => e.type === 'state' ? `state:${e.state}` : e.type), ['state:connecting', 'state:open']);
  assert.equal(home.version, 4);
  assert.equal(home.history, H);
  assert.equal(home.state, 'open');
  assert.deepEqual(streams.state.feeds.home, { state: 'open', history: H, version: 4, id: `home@ds1.${H}.4`, stale: null });
  assert.deepEqual(streams.delivered.map((d) => `${d.feed}:${d.event}:${d.version}`), ['home:snapshot:3', 'home:batch:4']);
  streams.close();
  await settle();
  assert.equal(source.closed, true);
  assert.equal(streams.state.closed, true);
  assert.throws(() => streams.subscribe('home', () => {}), /closed/);
}));

test('openStreams (own): an invalid feed name is refused to its listener alone and never reaches the stream', () => inPage(async () => {
  const streams = openStreams({ mode: 'own' });
  const events = [];
  streams.subscribe('.hidden', (event) => events.push(event));
  streams.subscribe('ok', () => {});
  assert.deepEqual(events, []); // told after subscribe returns
  await settle();
  assert.equal(events.length, 1);
  assert.equal(events[0].state, 'closed');
  assert.equal(events[0].status, 400);
  assert.equal(FakeEventSource.all.length, 1);
  assert.equal(FakeEventSource.all[0].url, '/events?feed=ok');
  assert.deepEqual(Object.keys(streams.state.feeds), ['ok']);
  streams.close();
}));

test('openStreams (own): a token on the page\'s origin goes in the cookie and, in own mode, in the stream\'s URL; a new one reconnects', () => inPage(async () => {
  const streams = openStreams({ mode: 'own', token: 'abc' });
  assert.equal(document.cookie, 'diffstreamAuthorization=abc; path=/; SameSite=Strict');
  streams.subscribe('home', () => {});
  await settle();
  assert.equal(FakeEventSource.all.length, 1);
  assert.equal(FakeEventSource.all[0].url, '/events?feed=home&authorization=abc');
  streams.setToken('');
  await settle();
  assert.equal(document.cookie, 'diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0');
  assert.equal(FakeEventSource.all.length, 2);
  assert.equal(FakeEventSource.all[1].url, '/events?feed=home');
  streams.close();
}));
