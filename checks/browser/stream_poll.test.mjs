// Unit tests of the StreamHub's polled feeds (Public/stream-poll.js): a feed asked for with `poll` is
// followed through its log with the page's fetch, shared by every tab that shows it, within `maxPolls`
// (the rest go in the event stream), and its snapshot, batches, starts over and deletion reach the tabs
// as a stream's would. A fake fetch answers each read when the test says. Run with node --test.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { StreamHub } = await importPublic('stream-hub.js');

const H = 'aaaaaaaaaaaaaaaa';
const id = (v, h = H) => `ds1.${h}.${v}`;
const snapshot = (feed, v, h = H) => ({ feed, history: h, version: v, sections: [] });
const batch = (feed, v, h = H) => ({ feed, history: h, from: v - 1, version: v, ops: [] });

function setup(options = {}) {
  const reads = []; // { url, headers, aborted, answer(status, body) }
  const sources = [];
  const deferred = [];
  const flush = () => { while (deferred.length) deferred.shift()(); };
  const hub = new StreamHub({
    EventSource: class { constructor(url) { this.url = url; sources.push(this); } addEventListener() {} close() { this.closed = true; } },
    fetch: (url, init) => new Promise((resolve, reject) => {
      const read = { url, headers: init.headers, aborted: false };
      read.answer = (status, body) => resolve({ status, json: async () => body });
      if (init.signal) init.signal.addEventListener('abort', () => { read.aborted = true; reject(new Error('aborted')); });
      reads.push(read);
    }),
    setTimeout: (f, ms) => (ms >= 45000 ? 0 : setTimeout(() => { f(); flush(); }, 0)), // the live read's timeout never fires here; backoffs at once
    clearTimeout: () => {},
    defer: (f) => deferred.push(f),
    ...options,
  });
  const inbox = {};
  const client = (name) => {
    inbox[name] ||= [];
    return (...messages) => { for (const m of messages) hub.handle(name, m, (answer) => inbox[name].push(answer)); flush(); };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
  return { hub, reads, sources, inbox, client, settle };
}

const sub = (feed, n = 1, extra = {}) => ({ type: 'subscribe', sub: n, feed, history: null, version: null, id: null, poll: true, ...extra });
const seen = (messages) => messages.filter((m) => m.type === 'event').map((m) => `${m.event}:${m.data.version ?? ''}`);
const pending = (reads) => reads.filter((r) => !r.done && !r.aborted);
async function answer(t, status, body) {
  const read = pending(t.reads)[0];
  read.done = true;
  read.answer(status, body);
  await t.settle();
  return read;
}

test('a polled feed is read through its log, never an event stream, and reaches the tab as a stream would', async () => {
  const t = setup();
  t.client('a')(sub('f'));
  assert.equal(t.sources.length, 0);
  assert.equal(pending(t.reads)[0].url, '/feeds/f/log');
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 2), batches: [], next: id(2), upToDate: false, cursor: '5' });
  assert.equal(pending(t.reads)[0].url, `/feeds/f/log?after=${id(2)}`);
  await answer(t, 200, { feed: 'f', history: H, batches: [batch('f', 3)], next: id(3), upToDate: true, cursor: '5' });
  assert.equal(pending(t.reads)[0].url, `/feeds/f/log?after=${id(3)}&live=1&cursor=5`);
  assert.deepEqual(seen(t.inbox.a), ['snapshot:2', 'batch:3']);
  assert.ok(t.inbox.a.some((m) => m.type === 'state' && m.state === 'open'));
});

test('two tabs share one read; a late tab is caught up from what the hub holds', async () => {
  const t = setup();
  t.client('a')(sub('f'));
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 2), batches: [], next: id(2), upToDate: true, cursor: '5' });
  t.client('b')(sub('f'));
  assert.equal(pending(t.reads).length, 1);
  await answer(t, 200, { feed: 'f', history: H, batches: [batch('f', 3)], next: id(3), upToDate: true, cursor: '6' });
  assert.deepEqual(seen(t.inbox.a), ['snapshot:2', 'batch:3']);
  assert.deepEqual(seen(t.inbox.b), ['snapshot:2', 'batch:3']);
  assert.equal(pending(t.reads).length, 1);
});

test('past maxPolls, a feed asked for with poll goes in the event stream', () => {
  const t = setup({ maxPolls: 2 });
  t.client('a')(sub('f1', 1), sub('f2', 2), sub('f3', 3));
  assert.equal(pending(t.reads).length, 2);
  assert.equal(t.sources.length, 1);
  assert.match(t.sources[0].url, /feed=f3$/);
});

test('a subscription\'s maxPolls sets the hub\'s', () => {
  const t = setup();
  t.client('a')(sub('f1', 1, { maxPolls: 1 }), sub('f2', 2, { maxPolls: 1 }));
  assert.equal(pending(t.reads).length, 1);
  assert.equal(t.sources.length, 1);
});

test('a 409 starts over from the snapshot, and the tab gets it', async () => {
  const t = setup();
  t.client('a')(sub('f'));
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 2), batches: [], next: id(2), upToDate: true, cursor: '5' });
  await answer(t, 409, { error: 'start over' });
  assert.equal(pending(t.reads)[0].url, '/feeds/f/log');
  const B = 'bbbbbbbbbbbbbbbb';
  await answer(t, 200, { feed: 'f', history: B, snapshot: snapshot('f', 1, B), batches: [], next: id(1, B), upToDate: true, cursor: '6' });
  assert.deepEqual(seen(t.inbox.a), ['snapshot:2', 'snapshot:1']);
});

test('a 404 while following is the feed\'s deletion; at the start it is a missing feed, asked again', async () => {
  const t = setup();
  t.client('a')(sub('f'));
  await answer(t, 404, { error: 'not found', detail: "no feed named 'f'" });
  assert.deepEqual(seen(t.inbox.a), ['notfound:']);
  await t.settle(); // the retry's backoff (at once here)
  assert.equal(pending(t.reads)[0].url, '/feeds/f/log');
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 1), batches: [], next: id(1), upToDate: true, cursor: '5' });
  await answer(t, 404, { error: 'not found' });
  assert.deepEqual(seen(t.inbox.a), ['notfound:', 'snapshot:1', 'deleted:']);
  assert.equal(pending(t.reads).length, 0);
});

test('the last tab leaving a polled feed ends its read', async () => {
  const t = setup();
  t.client('a')(sub('f'));
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 1), batches: [], next: id(1), upToDate: true, cursor: '5' });
  const live = pending(t.reads)[0];
  t.client('a')({ type: 'unsubscribe', sub: 1 });
  assert.equal(live.aborted, true);
  assert.equal(pending(t.reads).length, 0);
});

test('a failed read is retried from the same position, and the token goes in the header', async () => {
  const t = setup({ token: 'tok' });
  t.client('a')(sub('f'));
  assert.deepEqual(pending(t.reads)[0].headers, { Authorization: 'Bearer tok' });
  await answer(t, 200, { feed: 'f', history: H, snapshot: snapshot('f', 1), batches: [], next: id(1), upToDate: true, cursor: '5' });
  await answer(t, 503, { error: 'unavailable' });
  assert.ok(t.inbox.a.some((m) => m.type === 'state' && m.state === 'retrying'));
  assert.equal(pending(t.reads)[0].url, `/feeds/f/log?after=${id(1)}&live=1&cursor=5`);
});
