// Unit and property tests of the log follower (Public/diffstream-poll.js): the URLs it asks, what each
// answer means, and, against a simulated server that keeps the contract of docs/protocol.md ("Reads
// through HTTP caches") behind a cache that answers from stale entries, that a client following it
// always ends equal to the server's feed, never applying a batch across a gap. Run with node --test.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';
import { seededRandom as random } from './seeded_random.mjs';

const { LogFollower, logURL, logPosition } = await importPublic('diffstream-poll.js');
const { FeedState } = await importPublic('diffstream-protocol.js');

const H = 'aaaaaaaaaaaaaaaa';
const id = (v, h = H) => `ds1.${h}.${v}`;
const batch = (v, h = H) => ({ feed: 'f', history: h, from: v - 1, version: v, ops: [] });

test('logURL keeps the one order of the query and encodes the id', () => {
  assert.equal(logURL('', 'f'), '/feeds/f/log');
  assert.equal(logURL('http://x/', 'f', { after: id(3) }), `http://x/feeds/f/log?after=${id(3)}`);
  assert.equal(logURL('', 'f', { after: 'a b', live: true }), '/feeds/f/log?after=a%20b&live=1');
  assert.equal(logURL('', 'f', { after: id(3), live: true, cursor: '7' }), `/feeds/f/log?after=${id(3)}&live=1&cursor=7`);
  assert.equal(logURL('', 'f', { after: id(3), cursor: '7' }), `/feeds/f/log?after=${id(3)}`); // a cursor only on live reads
});

test('logPosition takes a multi-feed stream id back to the feed\'s own', () => {
  assert.equal(logPosition('home', `home@${id(4)}`), id(4));
  assert.equal(logPosition('home', id(4)), id(4));
  assert.equal(logPosition('home', null), null);
});

test('a follower starts from the snapshot, reads on while behind, then reads live with the cursor', () => {
  const f = new LogFollower('f');
  assert.equal(f.url(), '/feeds/f/log');
  let out = f.receive(200, { feed: 'f', history: H, snapshot: { feed: 'f', history: H, version: 2, sections: [] }, batches: [], next: id(2), upToDate: false, cursor: '10' });
  assert.deepEqual(out.events.map((e) => [e.event, e.id]), [['snapshot', id(2)]]);
  assert.equal(out.then, 'next');
  assert.equal(f.url(), `/feeds/f/log?after=${id(2)}`);
  out = f.receive(200, { feed: 'f', history: H, batches: [batch(3), batch(4)], next: id(4), upToDate: true, cursor: '10' });
  assert.deepEqual(out.events.map((e) => [e.event, e.data.version, e.id]), [['batch', 3, null], ['batch', 4, id(4)]]);
  assert.equal(f.url(), `/feeds/f/log?after=${id(4)}&live=1&cursor=10`);
  out = f.receive(200, { feed: 'f', history: H, batches: [], next: id(4), upToDate: true, cursor: '12' }); // the wait ended empty
  assert.deepEqual(out.events, []);
  assert.equal(f.url(), `/feeds/f/log?after=${id(4)}&live=1&cursor=12`);
});

test('a follower resumes from a position, skips what it holds, and starts over on a gap or another history', () => {
  const f = new LogFollower('f', { history: H, version: 5, id: `f@${id(5)}` });
  assert.equal(f.url(), `/feeds/f/log?after=${id(5)}`);
  let out = f.receive(200, { feed: 'f', history: H, batches: [batch(5), batch(6)], next: id(6), upToDate: true });
  assert.deepEqual(out.events.map((e) => e.data.version), [6]);
  out = f.receive(200, { feed: 'f', history: H, batches: [batch(8)], next: id(8), upToDate: true });
  assert.equal(out.then, 'restart');
  assert.equal(f.url(), '/feeds/f/log');
  const g = new LogFollower('f', { history: H, version: 5, id: id(5) });
  out = g.receive(200, { feed: 'f', history: 'bbbbbbbbbbbbbbbb', batches: [batch(6, 'bbbbbbbbbbbbbbbb')], next: id(6, 'bbbbbbbbbbbbbbbb'), upToDate: true });
  assert.equal(out.then, 'restart');
  assert.deepEqual(out.events, []);
});

const refusals = [
  [409, { version: 3 }, 'restart'],
  [404, { version: 3 }, 'deleted'],
  [404, null, 'notfound'],
  [401, null, 'unauthorized'],
  [403, null, 'forbidden'],
  [400, null, 'closed'],
  [500, null, 'retry'],
  [503, { version: 3 }, 'retry'],
  [429, null, 'retry'],
  [0, null, 'retry'],
];
for (const [status, position, then] of refusals) {
  test(`a ${status} answer ${position ? 'while following' : 'at the start'} means ${then}`, () => {
    const f = new LogFollower('f', position ? { history: H, version: position.version, id: id(position.version) } : null);
    const before = f.url();
    const out = f.receive(status, { error: 'e', detail: 'why' });
    assert.equal(out.then, then);
    assert.deepEqual(out.events, []);
    if (then === 'restart') assert.equal(f.url(), '/feeds/f/log');
    if (then === 'retry') assert.equal(f.url(), before); // the same read again
  });
}

test('an answer that is not the contract\'s (another feed, no next) is read again later, never applied', () => {
  const f = new LogFollower('f', { history: H, version: 3, id: id(3) });
  assert.equal(f.receive(200, { feed: 'g', batches: [], next: id(3) }).then, 'retry');
  assert.equal(f.receive(200, '<html>').then, 'retry');
});

const CHUNK = 64;

/// A server keeping the contract: a feed of integers (one item per write), a replay window, new
/// histories (a delete and re-create, a restart without data), and a cache in front that answers a
/// URL it saw before from its entry for as long as the entry's max-age, which the test's clock decides.
function simulatedServer(rand, window) {
  let history = 'h000000000000000';
  let count = 0;
  let items = [];
  let version = 1;
  let log = []; // batches within the window
  let now = 0;
  let histories = 0;
  const cache = new Map(); // url -> { until, status, body }
  const cursorNow = () => String(Math.floor(now / 20));
  const idOf = (v) => `ds1.${history}.${v}`;
  const snapshot = () => ({ feed: 'f', history, version, sections: [{ id: 's', items: items.map((i) => ({ id: i, kind: 'n' })) }] });
  function write() {
    const op = rand() < 0.3 && items.length ? { op: 'delete', item: items.splice(Math.floor(rand() * items.length), 1)[0] } : null;
    const ops = op ? [op] : [];
    if (!op) { const item = `i${count++}`; ops.push({ op: 'insert', item: { id: item, kind: 'n' }, section: 's', before: null }); items.push(item); }
    log.push({ feed: 'f', history, from: version, version: version + 1, ops });
    version++;
    if (log.length > window) log.shift();
  }
  function newHistory() {
    histories++;
    history = `h${String(histories).padStart(15, '0')}`;
    version = 1;
    log = [];
  }
  function origin(url) {
    const u = new URL(url, 'http://x');
    const after = u.searchParams.get('after');
    const cursor = u.searchParams.get('cursor');
    const nextCursor = cursor !== null && Number(cursor) >= Number(cursorNow()) ? String(Number(cursor) + 1 + Math.floor(rand() * 3)) : cursorNow();
    if (after === null) return { status: 200, maxAge: 5, body: { feed: 'f', history, snapshot: snapshot(), batches: [], next: idOf(version), upToDate: true, cursor: nextCursor } };
    const [, h, vs] = after.split('.');
    const v = Number(vs);
    const oldest = log.length ? log[0].from : version;
    if (h !== history || v > version || v < oldest) return { status: 409, maxAge: 0, body: { error: 'start over', feed: 'f', start: '/feeds/f/log' } };
    const boundary = (Math.floor(v / CHUNK) + 1) * CHUNK;
    const end = Math.min(version, boundary);
    const batches = log.filter((b) => b.version > v && b.version <= end);
    return { status: 200, maxAge: end === boundary ? Infinity : 5, body: { feed: 'f', history, batches, next: idOf(end), upToDate: end === version, cursor: nextCursor } };
  }
  return {
    write, newHistory,
    tick: (dt) => { now += dt; },
    get: (url) => {
      const hit = cache.get(url);
      if (hit && hit.until > now) return structuredClone(hit);
      const answer = origin(url);
      if (answer.status === 200) cache.set(url, { until: now + answer.maxAge, status: answer.status, body: answer.body });
      return structuredClone(answer);
    },
    get state() { return { history, version, items: [...items] }; },
  };
}

test('property: a follower behind a stale cache converges to the server, and never applies across a gap', () => {
  const first = Number(process.env.POLL_SEED || 1);
  for (let seed = first; seed < first + 60; seed++) {
    const rand = random(seed);
    const server = simulatedServer(rand, 1 + Math.floor(rand() * 200));
    const fail = (message) => { throw new Error(`seed ${seed}: ${message}`); };
    for (let i = 0; i < 1 + rand() * 100; i++) server.write();
    const follower = new LogFollower('f');
    const state = new FeedState('f');
    const reads = 200 + Math.floor(rand() * 200);
    for (let read = 0; read < reads; read++) {
      const r = rand();
      if (r < 0.3) { const n = Math.floor(rand() * 12); for (let i = 0; i < n; i++) server.write(); }
      else if (r < 0.33) server.newHistory();
      if (rand() < 0.5) server.tick(rand() * 8);
      const { status, body } = server.get(follower.url());
      const out = follower.receive(status, body);
      for (const e of out.events) {
        const result = state.apply(e.event, e.data, e.id);
        if (result.result === 'resync') fail(`applied across a gap: ${result.reason}`);
      }
      if (out.then === 'restart') state.reset();
      else if (out.then !== 'next') fail(`unexpected ${out.then}`);
    }
    // Quiet: no writes, time passes beyond every max-age; a few reads catch up.
    server.tick(100);
    for (let i = 0; i < 50 && !(follower.upToDate && state.version === server.state.version && state.history === server.state.history); i++) {
      const { status, body } = server.get(follower.url());
      const out = follower.receive(status, body);
      for (const e of out.events) state.apply(e.event, e.data, e.id);
      if (out.then === 'restart') state.reset();
      server.tick(6);
    }
    const want = server.state;
    if (state.history !== want.history || state.version !== want.version) fail(`ended at ${state.history}/${state.version}, the server is at ${want.history}/${want.version}`);
    assert.deepEqual(state.sections[0].items.map((i) => i.id), want.items, `seed ${seed}`);
  }
});
