// Property-based test of the StreamHub (Public/stream-hub.js) with many feeds on its streams:
// seeded random schedules of writes to random feeds, tabs joining and leaving, tabs subscribing to and
// dropping feeds, tabs asking a feed afresh, the hub going away (a new worker or elected tab takes over), streams dropping, feeds
// created late (notfound, retried), server restarts (a new history, or the same one for a durable
// store), every message delayed in its own FIFO queue and timers fired in random order. Each schedule
// runs with the default maxStreamFeeds (one stream for the 8 feeds), with 3 (several streams), and with
// 3 against a server that takes 2 (`400 too many feeds`, value 2: the hub splits again).
//
// Oracle: a simulated server (per-feed histories, the replay window, the multi-feed route's rules) and
// tabs that apply what they get with FeedState (Public/diffstream-protocol.js), skipping a batch they
// hold already as diffstream-streams.js does. Properties:
// - no tab ever sees a gap (no batch lost) or applies a version twice, and never has to resync;
// - after the queues drain, every tab's every feed shows the server's history and version;
// - a stream lists at most maxStreamFeeds feeds, and no feed is in two open streams of one hub;
// - adding or dropping a feed does not resync the others: when the hub opens a stream, every feed it
//   lists that no message concerned since the hub's last stream listing it opened is listed with
//   exactly the position that stream had reached.
// The seed is in every failure message; STREAM_HUB_SEED changes the first seed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';
import { seededRandom as random } from './seeded_random.mjs';

const { StreamHub } = await importPublic('stream-hub.js');
const { FeedState } = await importPublic('diffstream-protocol.js');

const FEEDS = ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7'];

/// Lets the hub's probes (fetch, then the answer's JSON) finish.
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function simulate(seed, steps, { maxStreamFeeds = undefined, serverLimit = 100 } = {}) {
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const fail = (message) => { throw new Error(`seed ${seed} (maxStreamFeeds ${maxStreamFeeds}, server ${serverLimit}): ${message}`); };
  // The server: feeds (some created later), a replay window, the streams it holds, its --max-stream-feeds.
  const server = { feeds: new Map(), restarts: 0, sources: new Set(), replay: 1024, limit: serverLimit };
  const newHistory = () => `h${server.restarts}x${Math.floor(rand() * 1e6)}`;
  for (const feed of FEEDS) if (rand() < 0.75) server.feeds.set(feed, { history: newHistory(), version: 1 + Math.floor(rand() * 3) });
  const idOf = (feed, history, version) => `${feed}@ds1.${history}.${version}`;
  const tabs = [];    // { n, client, alive, subs: Map(sub -> {feed, state: FeedState}) }
  const outbox = [];  // tab -> hub messages: { tab, message, to }
  let hub = null;
  let hubNumber = 0;
  let nextTab = 0;
  let nextSub = 1;
  let skipped = 0;    // batches a tab already held (in flight around a takeover): skipped, not applied twice
  let reopens = 0;    // streams opened by a hub with a feed it had listed before (a feed added or dropped, a drop)
  let shared = 0;     // streams opened while the same hub had another open: several streams at once
  let refusals = 0;   // streams the server refused as too many feeds
  let probes = 0;     // probes started and not yet settled
  let clock = 0;      // orders stream openings and the messages that concern a feed
  const deferred = [];
  const timers = new Map();
  let nextTimer = 1;

  class SimEventSource {
    constructor(url) {
      this.listeners = {};
      this.queue = [];
      this.readyState = 0;
      this.hub = hub;
      const params = new URL(url, 'http://x').searchParams.getAll('feed');
      this.listed = params.map((p) => { const at = p.indexOf('@'); return at < 0 ? { feed: p, id: null } : { feed: p.slice(0, at), id: p }; });
      this.carries = new Set(); // the listed feeds the server serves (not refused)
      this.reached = new Map(); // feed -> the last id delivered to the hub, or the position it was listed with
      for (const { feed, id } of this.listed) this.reached.set(feed, id);
      this.openedAt = ++clock;
      this.checkLimits();
      this.checkPositions();
      if (this.listed.some(({ feed }) => hub.carrier.has(feed))) reopens++;
      if ([...server.sources].some((s) => s.hub === hub)) shared++;
      for (const { feed } of this.listed) hub.carrier.set(feed, this);
      server.sources.add(this);
      if (this.listed.length > server.limit) { this.queue.push({ type: 'refused' }); refusals++; } // 400: the EventSource gives up
      else this.connect();
    }

    /// A stream lists at most maxStreamFeeds feeds, and a feed is in one open stream of the hub at most.
    checkLimits() {
      if (this.listed.length > (maxStreamFeeds ?? 100)) fail(`hub ${hub.n} lists ${this.listed.length} feeds in one stream`);
      for (const s of server.sources) {
        if (s.hub !== hub) continue;
        for (const { feed } of this.listed) if (s.carries.has(feed)) fail(`hub ${hub.n} lists ${feed} in two open streams`);
      }
    }

    /// Adding or dropping a feed must not resync the others: each feed listed by the hub's previous
    /// stream listing it, and untouched since that stream opened, is listed with the position it reached.
    checkPositions() {
      for (const { feed, id } of this.listed) {
        const previous = hub.carrier.get(feed);
        if (!previous || (hub.touched.get(feed) ?? 0) > previous.openedAt) continue;
        const expected = previous.reached.get(feed);
        if (expected !== null && id !== expected) fail(`hub ${hub.n} reopened a stream with ${feed} at ${id}, not at ${expected}: a resync`);
      }
    }

    addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
    close() { this.readyState = 2; server.sources.delete(this); }

    connect() {
      this.queue.push({ type: 'open' });
      for (const { feed, id } of this.listed) {
        const f = server.feeds.get(feed);
        if (!f) { this.queue.push({ type: 'notfound', data: { feed, error: 'not found' } }); continue; }
        this.carries.add(feed);
        const prefix = `${feed}@ds1.${f.history}.`;
        const version = id && id.startsWith(prefix) ? Number(id.slice(prefix.length)) : null;
        if (version !== null && version <= f.version && f.version - version <= server.replay) {
          for (let v = version + 1; v <= f.version; v++) this.pushBatch(feed, f, v);
        } else {
          this.queue.push({ type: 'snapshot', data: { feed, history: f.history, version: f.version, sections: [] }, id: idOf(feed, f.history, f.version) });
        }
      }
    }

    pushBatch(feed, f, v) {
      this.queue.push({ type: 'batch', data: { feed, history: f.history, from: v - 1, version: v, ops: [] }, id: idOf(feed, f.history, v) });
    }

    deliver() {
      const { type, data, id } = this.queue.shift();
      if (type === 'refused') { this.readyState = 2; server.sources.delete(this); for (const l of this.listeners.error || []) l({}); return; }
      if (type === 'open') { this.readyState = 1; for (const l of this.listeners.open || []) l({}); return; }
      if (id) this.reached.set(data.feed, id);
      for (const l of this.listeners[type] || []) l({ data: JSON.stringify(data), lastEventId: id || '' });
    }

    drop() { // the connection drops: EventSource reports an error and would reconnect by itself
      this.queue = [];
      this.readyState = 0;
      for (const l of this.listeners.error || []) l({});
    }
  }

  const env = {
    EventSource: SimEventSource,
    fetch: async (url) => { // the probe of a refused stream: the server's answer to the same request
      probes++;
      const count = new URL(url, 'http://x').searchParams.getAll('feed').length;
      if (count <= server.limit) return { status: 200, json: async () => ({}) };
      return { status: 400, json: async () => ({ error: 'too many feeds', detail: `at most ${server.limit} feeds per stream`, limit: 'max-stream-feeds', value: server.limit }) };
    },
    setTimeout: (f) => { const t = nextTimer++; timers.set(t, f); return t; },
    clearTimeout: (t) => { timers.delete(t); },
    defer: (f) => deferred.push(f),
  };
  const flush = () => { while (deferred.length) deferred.shift()(); };

  function startHub() {
    hub = { n: ++hubNumber, carrier: new Map(), touched: new Map() }; // carrier: feed -> the last stream listing it
    hub.hub = new StreamHub({ ...env, maxStreamFeeds });
    for (const tab of tabs) if (tab.alive) for (const [sub, entry] of tab.subs) outbox.push({ tab, message: subscribeMessage(sub, entry), to: hub });
  }
  const subscribeMessage = (sub, { feed, state }) => ({ type: 'subscribe', sub, feed, history: state.history, version: state.version, id: state.lastEventId });

  function toHub(item) {
    const { tab, message, to } = item;
    if (to !== hub || !tab.alive) return; // sent to a hub that went away: lost (the tab subscribes again)
    const slot = hub.hub.subs.get(`${tab.client}/${message.sub}`);
    if (message.feed) hub.touched.set(message.feed, ++clock);
    if (slot) hub.touched.set(slot.feed, ++clock);
    hub.hub.handle(tab.client, message, (answer) => tab.inbox.push(answer));
  }

  function receive(tab, message) {
    const entry = tab.subs.get(message.sub);
    if (!tab.alive || !entry || message.type !== 'event') return;
    const { event, data, id } = message;
    if (event === 'notfound') return;
    if (event !== 'snapshot' && event !== 'batch') fail(`tab ${tab.n} got ${event} for ${entry.feed}`);
    if (data.feed !== entry.feed) fail(`tab ${tab.n} got ${data.feed} on its subscription to ${entry.feed}`);
    if (event === 'batch' && entry.resyncing) return; // asked afresh: dropped until the snapshot, as diffstream-streams.js does
    if (event === 'snapshot') entry.resyncing = false;
    const { result, reason } = entry.state.apply(event, data, id);
    if (result === 'duplicate') skipped++;
    if (result === 'resync') fail(`tab ${tab.n}, feed ${entry.feed}: ${reason} (got ${id})`);
  }

  function subscribe(tab, feed) {
    const sub = nextSub++;
    const entry = { feed, state: new FeedState(feed) };
    tab.subs.set(sub, entry);
    outbox.push({ tab, message: subscribeMessage(sub, entry), to: hub });
  }

  const write = (feed) => {
    const f = server.feeds.get(feed);
    f.version++;
    for (const source of server.sources) if (source.carries.has(feed)) source.pushBatch(feed, f, f.version);
  };

  const actions = {
    write() { const feed = pick([...server.feeds.keys()]); if (feed) write(feed); },
    create() { // a feed that did not exist: the streams that asked got notfound, and retry later
      const feed = pick(FEEDS.filter((f) => !server.feeds.has(f)));
      if (feed) server.feeds.set(feed, { history: newHistory(), version: 1 });
    },
    restart() { // a new process: every stream drops; histories change unless the store is durable
      server.restarts++;
      const durable = rand() < 0.5;
      for (const f of server.feeds.values()) if (!durable) Object.assign(f, { history: newHistory(), version: Math.floor(rand() * 5) });
      for (const source of [...server.sources]) source.drop();
    },
    drop() { const source = pick([...server.sources]); if (source) source.drop(); },
    join() {
      const tab = { n: nextTab++, alive: true, subs: new Map(), inbox: [] };
      tab.client = `tab${tab.n}`;
      tabs.push(tab);
      const count = 1 + Math.floor(rand() * 3);
      for (const feed of FEEDS.filter(() => rand() < count / FEEDS.length)) subscribe(tab, feed);
    },
    leave() {
      const tab = pick(tabs.filter((t) => t.alive));
      if (!tab) return;
      tab.alive = false;
      hub.hub.detach(tab.client);
    },
    add() { // a tab subscribes to one more feed
      const tab = pick(tabs.filter((t) => t.alive));
      if (!tab) return;
      const held = new Set([...tab.subs.values()].map((e) => e.feed));
      const feed = pick(FEEDS.filter((f) => !held.has(f)));
      if (feed) subscribe(tab, feed);
    },
    remove() { // a tab drops one of its feeds
      const tab = pick(tabs.filter((t) => t.alive && t.subs.size));
      if (!tab) return;
      const sub = pick([...tab.subs.keys()]);
      tab.subs.delete(sub);
      outbox.push({ tab, message: { type: 'unsubscribe', sub }, to: hub });
    },
    resync() { // a tab asks one of its feeds afresh (say, its rendering failed): a snapshot follows
      const tab = pick(tabs.filter((t) => t.alive && t.subs.size));
      if (!tab) return;
      const sub = pick([...tab.subs.keys()]);
      const entry = tab.subs.get(sub);
      entry.state.reset();
      entry.resyncing = true;
      outbox.push({ tab, message: { type: 'resync', sub }, to: hub });
    },
    takeover() { // the worker or the elected tab goes away, its stream with it; messages to it are lost
      hub.hub.closeAll();
      for (const source of [...server.sources]) source.close();
      startHub();
    },
    serverEvent() {
      const source = pick([...server.sources].filter((s) => s.queue.length));
      if (source) source.deliver();
    },
    toHub() {
      if (!outbox.length) return;
      // one FIFO per tab: the oldest message of a random tab
      const tab = pick([...new Set(outbox.map((m) => m.tab))]);
      toHub(outbox.splice(outbox.findIndex((m) => m.tab === tab), 1)[0]);
    },
    toTab() {
      const tab = pick(tabs.filter((t) => t.inbox.length));
      if (tab) receive(tab, tab.inbox.shift());
    },
    timer() {
      const t = pick([...timers.keys()]);
      if (t === undefined) return;
      const f = timers.get(t);
      timers.delete(t);
      f();
    },
  };
  const weights = [['write', 8], ['create', 0.3], ['restart', 0.2], ['drop', 0.4], ['join', 1], ['leave', 0.6], ['add', 1.2], ['remove', 1], ['resync', 0.3],
    ['takeover', 0.5], ['serverEvent', 16], ['toHub', 6], ['toTab', 16], ['timer', 1]];
  const total = weights.reduce((sum, [, w]) => sum + w, 0);
  startHub();
  for (let i = 0; i < 3; i++) actions.join();
  for (let step = 0; step < steps; step++) {
    let r = rand() * total;
    const [name] = weights.find(([, w]) => (r -= w) < 0) || weights[0];
    actions[name]();
    flush();
    if (probes) { await settle(); probes = 0; flush(); }
  }
  // Drain: every feed exists now; deliver everything (each queue FIFO), firing timers only when idle.
  for (const feed of FEEDS) if (!server.feeds.has(feed)) server.feeds.set(feed, { history: newHistory(), version: 1 });
  let guard = 0;
  for (; guard < 200000; guard++) {
    flush();
    if (probes) { await settle(); probes = 0; continue; }
    if (outbox.length) { toHub(outbox.shift()); continue; }
    const source = [...server.sources].find((s) => s.queue.length);
    if (source) { source.deliver(); continue; }
    const tab = tabs.find((t) => t.inbox.length);
    if (tab) { receive(tab, tab.inbox.shift()); continue; }
    if (timers.size) { actions.timer(); continue; }
    break;
  }
  if (guard === 200000) fail('the schedule does not settle');
  for (const tab of tabs.filter((t) => t.alive)) {
    for (const { feed, state } of tab.subs.values()) {
      const f = server.feeds.get(feed);
      if (state.version !== f.version || state.history !== f.history) {
        fail(`tab ${tab.n} ends with ${feed} at ${state.history}.${state.version}, the server at ${f.history}.${f.version}`);
      }
    }
  }
  return { hubs: hubNumber, skipped, reopens, shared, refusals };
}

async function run(options) {
  const base = Number(process.env.STREAM_HUB_SEED || 20261125);
  const totals = { hubs: 0, skipped: 0, reopens: 0, shared: 0, refusals: 0 };
  for (let i = 0; i < 300; i++) {
    const result = await simulate(base + i, 500, options);
    for (const key of Object.keys(totals)) totals[key] += result[key];
  }
  if (process.env.STREAM_HUB_VERBOSE) console.log(options, totals);
  assert.ok(totals.hubs > 300, 'the schedules included takeovers');
  assert.ok(totals.skipped > 0, 'the schedules delivered some batches twice, which the tabs skipped');
  assert.ok(totals.reopens > 1000, 'the schedules reopened streams with feeds added and dropped');
  return totals;
}

test('many feeds on one stream: no batch lost or applied twice, every tab converges, no feed resyncs another', async () => {
  const totals = await run({});
  assert.equal(totals.shared, 0, 'one stream per hub for 8 feeds');
});

test('many feeds on several streams (maxStreamFeeds 3): the same, and one stream\'s changes and failures leave the others', async () => {
  const totals = await run({ maxStreamFeeds: 3 });
  assert.ok(totals.shared > 1000, 'the schedules had hubs with several streams');
});

test('a server that takes fewer feeds per stream (2) than the hub thinks (3): the hub splits again, with the same guarantees', async () => {
  const totals = await run({ maxStreamFeeds: 3, serverLimit: 2 });
  assert.ok(totals.refusals > 100, 'the schedules had streams refused as too many feeds');
});
