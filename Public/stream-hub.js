// DiffStream: the hub that holds the event streams for every feed its tabs show (`GET /events?feed=…`,
// docs/protocol.md): one stream, or one per `maxStreamFeeds` feeds beyond that (the server's
// `--max-stream-feeds`), and relays each feed to the tabs subscribed to it. It runs inside the SharedWorker
// (stream-worker.js), or inside the one elected tab, or in a lone tab (diffstream-streams.js). It
// touches no DOM and no globals: EventSource, fetch and timers are injected, so it is tested without a
// browser (tests/browser/stream_hub.test.mjs, stream_hub_property.test.mjs).
//
// Guarantees: a tab gets each feed as one snapshot and the batches that follow it, none lost and none
// twice, also across a change of hub (a new worker or elected tab: the tabs subscribe again with the
// position they hold). A tab that adds or drops a feed reconnects the one stream that feed is in, with
// every other feed's position, so those resume where they stand (the server sends them nothing) and
// never resync; the feeds of the other streams see nothing of it.
import { eventsURL, isFeedName, invalidFeedDetail } from './diffstream-protocol.js';

/// Batches kept per feed after the last snapshot, to catch up a tab that joins or takes over: at most
/// this many, and at most this many characters of JSON in all.
export const HUB_LOG_LIMIT = 256;
export const HUB_LOG_CHARS = 4 * 1024 * 1024;
/// Reconnect and retry delays: the first (the server's `retry: 2000`), doubled on each failure, at most the last.
export const RETRY_FIRST_MS = 2000;
export const RETRY_MAX_MS = 30000;
/// A feed that was unavailable (`event: unavailable`: the server cannot reach its store, Redis) when its
/// stream ended: how long a new stream has to say so again before the outage is taken as over
/// (`available`). The server says it right after the feed's first events.
export const OUTAGE_GRACE_MS = 2000;
const backoff = (failures) => Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** failures);

/// One feed of the hub's streams and the subscriptions (tabs) it serves.
///
/// Position: `history`/`version`/`lastEventId` is where the feed stands (the last event received, or
/// the position it resumes from). `snapshot` is the last snapshot received and `log` the batches after
/// it (or, once the log overflowed or after a resume, the batches since some point), so a tab that
/// joins late gets a snapshot and the batches after it, and one that was ahead or behind gets only
/// what it misses.
class FeedSlot {
  constructor(hub, feed) {
    this.hub = hub;
    this.feed = feed;
    this.subs = new Map(); // key -> { send, history, version }
    this.stream = null;    // the Stream it is assigned to, while subscribed to and not refused
    this.history = null;
    this.version = null;
    this.lastEventId = null;
    this.snapshot = null;  // { data, id }
    this.log = [];         // [{ data, id, size }]
    this.logChars = 0;
    this.state = 'connecting';
    this.ended = null;     // { event, data }: refused (notfound, forbidden, unauthorized): not in the stream
    this.failures = 0;     // notfound answers in a row, for the backoff
    this.timer = 0;        // the notfound retry
    this.epoch = 0;        // bumped when the position is forgotten: events of a stream opened before are ignored
    this.outage = null;    // { data, pending, timer }: the server said `unavailable`; pending: said on an earlier stream
  }

  // ---- Store outage: `event: unavailable` / `available` (no id: the position is not touched) -----------
  // Each subscription's `stale` says what it was told, so it hears of an outage once each way, also a
  // tab that joins during one or that comes from another hub (it subscribes with `stale`).

  tellUnavailable(sub) {
    if (!this.outage || sub.stale) return;
    sub.stale = true;
    sub.send({ type: 'event', event: 'unavailable', data: this.outage.data, id: null });
  }

  tellAvailable(sub) {
    if (!sub.stale) return;
    sub.stale = false;
    sub.send({ type: 'event', event: 'available', data: { feed: this.feed }, id: null });
  }

  onUnavailable(data) {
    if (this.outage) this.hub.clearTimeout(this.outage.timer);
    this.outage = { data, pending: false, timer: 0 };
    for (const sub of this.subs.values()) this.tellUnavailable(sub);
  }

  onAvailable() {
    this.endOutage();
  }

  /// The outage is over (or the feed's part of the stream ended): subscriptions told of it hear
  /// `available`, unless `quietly` (deleted, refused: that event says more).
  endOutage(quietly = false) {
    if (this.outage) this.hub.clearTimeout(this.outage.timer);
    this.outage = null;
    for (const sub of this.subs.values()) if (quietly) sub.stale = false; else this.tellAvailable(sub);
  }

  /// A new stream carries the feed: an outage in force must be said again within OUTAGE_GRACE_MS, else it is over.
  expectOutage() {
    if (!this.outage || this.outage.pending) return;
    const outage = this.outage;
    outage.pending = true;
    outage.timer = this.hub.setTimeout(() => { if (this.outage === outage && outage.pending) this.endOutage(); }, OUTAGE_GRACE_MS);
  }

  /// Forgets the position: the feed is asked for afresh (a snapshot), or from `from` ({history, version, id}).
  reposition(from = null) {
    this.epoch++;
    this.history = from ? from.history : null;
    this.version = from ? from.version : null;
    this.lastEventId = from ? from.id : null;
    this.snapshot = null;
    this.clearLog();
  }

  clearLog() {
    this.log = [];
    this.logChars = 0;
  }

  setState(state, info = {}) {
    if (state === this.state) return;
    this.state = state;
    for (const sub of this.subs.values()) sub.send({ type: 'state', state, ...info });
  }

  deliver(sub, event, data, id) {
    sub.send({ type: 'event', event, data, id });
    if (event === 'snapshot' || event === 'batch') { sub.history = data.history ?? null; sub.version = data.version; }
  }

  onSnapshot(data, id) {
    this.snapshot = { data, id };
    this.clearLog();
    this.history = data.history ?? null;
    this.version = data.version;
    this.lastEventId = id;
    this.failures = 0;
    this.setState('open');
    for (const sub of this.subs.values()) this.deliver(sub, 'snapshot', data, id);
  }

  onBatch(data, id, size = 0) {
    const history = data.history ?? null;
    if (history !== this.history || data.from !== this.version) { this.snapshot = null; this.clearLog(); } // not a chain: start a new log
    this.log.push({ data, id, size });
    this.logChars += size;
    while (this.log.length > HUB_LOG_LIMIT || (this.logChars > HUB_LOG_CHARS && this.log.length > 1)) {
      this.logChars -= this.log.shift().size;
      this.snapshot = null; // the log no longer reaches back to it
    }
    this.history = history;
    this.version = data.version;
    this.lastEventId = id;
    this.setState('open');
    for (const sub of this.subs.values()) {
      // A tab that already holds this version of this history (it was ahead of where we resumed) skips it.
      if (sub.history === history && sub.version !== null && data.version <= sub.version) continue;
      this.deliver(sub, 'batch', data, id);
    }
  }

  /// The server ended this feed's part of the stream: refused (notfound, forbidden, unauthorized).
  /// A feed that does not exist (yet) is asked for again with backoff; the others wait for a retry.
  onRefused(event, data) {
    this.ended = { event, data };
    this.endOutage(true);
    this.hub.left(this);
    for (const sub of this.subs.values()) sub.send({ type: 'event', event, data, id: null });
    if (event === 'notfound') {
      this.setState('retrying');
      this.hub.clearTimeout(this.timer);
      this.timer = this.hub.setTimeout(() => { this.timer = 0; this.hub.retryMissing(); }, backoff(this.failures++));
    } else {
      this.setState('closed');
    }
  }

  /// Asks again now for a refused feed (a new token, say); true if it was refused.
  unrefuse() {
    if (!this.ended) return false;
    this.hub.clearTimeout(this.timer);
    this.timer = 0;
    this.ended = null;
    this.failures = 0;
    this.setState('connecting');
    return true;
  }

  /// What a tab that joins (or rejoins after a takeover) needs to be current; false if nothing we hold serves it.
  catchUp(sub) {
    if (this.ended) { sub.send({ type: 'event', event: this.ended.event, data: this.ended.data, id: null }); sub.send({ type: 'state', state: this.state }); return true; }
    const served = this.replay(sub);
    if (served) { sub.send({ type: 'state', state: this.state }); this.joinOutage(sub); }
    return served;
  }

  /// A subscription that joins: told of an outage in force; one that was told of an outage elsewhere
  /// (another hub) that this feed does not know of makes it expect one (over after the grace, unless
  /// the stream says it).
  joinOutage(sub) {
    if (this.outage) { this.tellUnavailable(sub); return; }
    if (!sub.stale) return;
    this.outage = { data: { feed: this.feed, detail: '' }, pending: false, timer: 0 };
    if (this.state === 'open') this.expectOutage();
  }

  replay(sub) {
    if (this.version === null) return true; // asked for afresh: its snapshot is on the way
    if (sub.history === this.history && sub.version !== null) {
      if (sub.version >= this.version) return true; // current, or ahead: later batches it holds are skipped
      const start = this.log.findIndex((b) => b.data.from === sub.version);
      if (start >= 0) { for (const b of this.log.slice(start)) this.deliver(sub, 'batch', b.data, b.id); return true; }
    }
    if (this.snapshot) {
      this.deliver(sub, 'snapshot', this.snapshot.data, this.snapshot.id);
      for (const b of this.log) this.deliver(sub, 'batch', b.data, b.id);
      return true;
    }
    return false;
  }
}

/// One event stream of the hub: the feeds assigned to it (at most the hub's `maxStreamFeeds`), the
/// EventSource that carries them, and its own failures, backoff and probe. A feed keeps its stream while
/// it is subscribed to, so adding or dropping a feed reconnects only the stream it is in, and one stream
/// failing leaves the feeds of the others as they are.
class Stream {
  constructor(hub) {
    this.hub = hub;
    this.members = new Set(); // the slots assigned to this stream, in the order they joined
    this.source = null;
    this.listed = [];         // the slots the open EventSource carries, in the order listed
    this.url = null;
    this.generation = 0;      // events of an EventSource we closed are ignored
    this.failures = 0;        // failed connections in a row, for the backoff
    this.retryTimer = 0;      // the reconnect after a failure
    this.forced = false;      // reconnect even if the feeds are the same (a feed asked afresh)
  }

  add(slot) {
    this.members.add(slot);
    slot.stream = this;
  }

  /// The feed leaves this stream (unsubscribed, or moved when the limit was lowered): the next sync reconnects without it.
  remove(slot) {
    this.members.delete(slot);
    if (slot.stream === this) slot.stream = null;
  }

  /// The server ended the feed's part of this stream (refused, deleted): the EventSource no longer
  /// carries it, so it leaves without a reconnect.
  left(slot) {
    this.remove(slot);
    this.listed = this.listed.filter((s) => s !== slot);
  }

  /// True if the open EventSource does not carry exactly the members (or must reconnect anyway), and no
  /// reconnect after a failure is pending (it will carry them).
  changed() {
    const members = [...this.members];
    const same = this.source && !this.forced && members.length === this.listed.length && members.every((slot, i) => slot === this.listed[i]);
    return !same && !this.retryTimer;
  }

  closeSource() {
    this.generation++;
    if (this.source) { this.source.close(); this.source = null; }
    this.listed = [];
  }

  /// No feed is left in it: the stream ends for good.
  close() {
    this.closeSource();
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = 0;
  }

  connect(slots) {
    const hub = this.hub;
    const g = this.generation;
    const epochs = new Map(slots.map((slot) => [slot, slot.epoch]));
    const url = eventsURL(hub.baseURL, slots.map((slot) => ({ feed: slot.feed, lastEventId: slot.lastEventId })), hub.token);
    const source = new hub.EventSource(url);
    this.source = source;
    this.listed = slots;
    this.url = url;
    hub.onOpen(url);
    const on = (type, handler) => source.addEventListener(type, (event) => {
      if (g !== this.generation) return;
      let data;
      try {
        data = JSON.parse(event.data || '{}');
      } catch (error) { // not ours to guess at: reconnect this stream, every feed from the position it holds
        console.warn(`could not read a ${type} event (${error.message}); reconnecting`);
        this.closeSource();
        this.forced = true;
        hub.schedule();
        return;
      }
      const slot = hub.feeds.get(data.feed);
      // A feed we left, that was refused, that another stream carries now, or whose position was
      // forgotten since (a reconnect is due).
      if (!slot || slot.stream !== this || epochs.get(slot) !== slot.epoch || slot.ended) return;
      handler(slot, data, event.lastEventId || null, (event.data || '').length);
    });
    source.addEventListener('open', () => {
      if (g !== this.generation) return;
      this.failures = 0;
      for (const slot of slots) if (this.carries(slot)) { slot.setState('open'); slot.expectOutage(); }
    });
    on('snapshot', (slot, data, id) => slot.onSnapshot(data, id));
    on('batch', (slot, data, id, size) => slot.onBatch(data, id, size));
    on('deleted', (slot, data) => hub.onDeleted(slot, data));
    on('unavailable', (slot, data) => slot.onUnavailable(data));
    on('available', (slot) => slot.onAvailable());
    for (const refusal of ['notfound', 'forbidden', 'unauthorized']) on(refusal, (slot, data) => slot.onRefused(refusal, data));
    // The browser's own reconnect would send one Last-Event-ID, which cannot hold every feed's
    // position: the stream is closed on any error and reconnected with all of them in the URL.
    source.addEventListener('error', () => {
      if (g !== this.generation) return;
      const refused = source.readyState === 2; // CLOSED: the answer was not a stream (a status, or no server)
      this.closeSource();
      for (const slot of slots) if (this.carries(slot)) slot.setState('retrying');
      if (refused) this.probe(url, this.generation, slots);
      else this.retryLater();
    });
  }

  /// The slot is still this stream's to report on (not refused, not moved to another stream).
  carries(slot) {
    return this.members.has(slot) && !slot.ended;
  }

  retryLater() {
    if (this.members.size === 0) { this.hub.schedule(); return; } // nothing left to carry: the hub ends it
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = this.hub.setTimeout(() => { this.retryTimer = 0; this.hub.sync(); }, backoff(this.failures++));
  }

  /// Reconnects now if a reconnect after a failure is pending (a new token, a tab's retry); true if one was.
  retryNow() {
    if (!this.retryTimer) return false;
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = 0;
    this.failures = 0;
    return true;
  }

  /// The stream was refused: asks the same URL for its status (and drops the answer), to tell its feeds why.
  /// A body that lists each feed's refusal (`feeds`) tells each feed its own; without one,
  /// 401 and 403 end every feed until a retry; 404 (none of them exists) retries each with backoff;
  /// 400 `too many feeds` (a server configured for fewer than `maxStreamFeeds`) lowers the hub's limit to
  /// the server's and splits the feeds again; any other answer, or none, retries the stream with backoff.
  async probe(url, g, slots) {
    let status = 0;
    let body = {};
    try {
      const abort = typeof AbortController === 'function' ? new AbortController() : null;
      const response = await this.hub.fetch(url, { cache: 'no-store', signal: abort && abort.signal });
      status = response.status;
      if (status >= 400 && status < 500) body = await response.json().catch(() => ({}));
      if (abort) abort.abort();
    } catch (_) { /* the server is away: keep trying */ }
    if (g !== this.generation || this.retryTimer) return;
    const ours = slots.filter((slot) => this.carries(slot) && slot.subs.size > 0);
    const event = { 401: 'unauthorized', 403: 'forbidden', 404: 'notfound' }[status];
    const each = Array.isArray(body.feeds) ? new Map(body.feeds.filter((f) => f && typeof f.feed === 'string').map((f) => [f.feed, f])) : null;
    if (each && event) {
      // Every feed refused, each for its own reason (docs/protocol.md): each is told what the stream
      // would have told it, so a missing feed is retried while a forbidden one waits for a token.
      let retry = false;
      for (const slot of ours) {
        const refusal = each.get(slot.feed);
        if (refusal && ['unauthorized', 'forbidden', 'notfound'].includes(refusal.event)) {
          slot.onRefused(refusal.event, { feed: slot.feed, error: refusal.error || String(status), detail: refusal.detail || '', status });
        } else {
          retry = true; // unavailable (Redis) or not named: the stream is tried again
        }
      }
      if (retry) this.retryLater(); else this.hub.schedule();
    } else if (event) {
      for (const slot of ours) slot.onRefused(event, { feed: slot.feed, error: body.error || String(status), detail: body.detail || '', status });
      this.hub.schedule(); // feeds subscribed to since, if any
    } else if (status === 400 && body.error === 'too many feeds' && this.hub.lowerLimit(body.value, slots.length)) {
      this.hub.schedule(); // split again with the server's limit: this stream reconnects now, with fewer feeds
    } else if (status >= 400 && status < 500) { // the request itself is wrong (a bad feed name, too many feeds)
      for (const slot of ours) slot.setState('closed', { status, detail: body.detail || body.error || String(status) });
      console.warn(`the event stream was refused (${status}): ${body.detail || body.error || ''}`);
    } else {
      this.retryLater();
    }
  }
}

/// Holds the event streams for all the feeds any of its clients (tabs) subscribe to: one stream while
/// they are at most `maxStreamFeeds`, more beyond (the server takes at most that many per stream); each
/// client has subscriptions `sub`, each to one feed.
///
/// Messages in: subscribe {sub, feed, history, version, id, stale}, unsubscribe {sub}, resync {sub}, retry {sub},
/// token {token}, many {messages} (several of these, sent in one task). Messages out (to the subscription's `send`, with `sub` and `feed`):
/// event {event: snapshot|batch|deleted|notfound|forbidden|unauthorized|unavailable|available, data, id} and
/// state {state: connecting|open|retrying|closed, status?, detail?}. A subscription to an invalid feed name
/// (docs/protocol.md: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot) gets only state closed with
/// status 400 and the reason, and is never listed in a stream (the server would refuse the whole stream).
///
/// Options: `EventSource`, `fetch`, `setTimeout`, `clearTimeout`, `defer` (runs a function soon, after
/// the current message: queueMicrotask by default), `baseURL` (the server's origin; '' for the page's),
/// `token` (sent in the stream's URL; without one the cookie carries it), `onOpen(url)` (each stream opened),
/// `maxStreamFeeds` (most feeds in one stream: the server's `--max-stream-feeds`; a server that refuses
/// a stream as too many feeds lowers it to the limit it names).
export class StreamHub {
  constructor({ EventSource, fetch, setTimeout, clearTimeout, defer, baseURL = '', token = null, onOpen, maxStreamFeeds = 100 } = {}) {
    this.EventSource = EventSource;
    this.fetch = fetch;
    this.setTimeout = setTimeout;
    this.clearTimeout = clearTimeout;
    this.defer = defer || ((f) => queueMicrotask(f));
    this.baseURL = baseURL;
    this.token = token;
    this.onOpen = onOpen || (() => {});
    this.maxStreamFeeds = maxStreamFeeds >= 1 ? Math.floor(maxStreamFeeds) : 100;
    this.feeds = new Map(); // feed -> FeedSlot
    this.subs = new Map();  // `${client}/${sub}` -> FeedSlot
    this.streams = [];      // Stream, in the order opened: a new feed goes in the first with room
    this.scheduled = false;
  }

  /// Brings the streams in line with the slots soon (once for a burst of messages).
  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    this.defer(() => { this.scheduled = false; this.sync(); });
  }

  /// The slot's stream reconnects even if its feeds are the same (the feed is asked from a new position).
  force(slot) {
    if (slot.stream) slot.stream.forced = true; // else it is not in a stream yet: joining one reconnects it
    this.schedule();
  }

  /// The feeds that belong in a stream: subscribed to, and not refused.
  wanted() {
    return [...this.feeds.values()].filter((slot) => slot.subs.size > 0 && !slot.ended);
  }

  /// Assigns the wanted feeds to streams, keeping every feed where it is: feeds no longer wanted leave
  /// their stream, the last to join a stream past a (lowered) limit leave it, streams left empty end, and
  /// a feed without a stream is placed in one. Then each stream that changed reconnects; the others are
  /// untouched. (Each stream is a connection: over HTTP/1.1 a browser opens six per origin, shared with
  /// the page's other requests, so past about 500 feeds an origin needs HTTP/2. Not enforced here.)
  sync() {
    const wanted = this.wanted();
    const keep = new Set(wanted);
    for (const stream of this.streams) {
      for (const slot of stream.members) if (!keep.has(slot)) stream.remove(slot);
      for (const slot of [...stream.members].slice(this.maxStreamFeeds)) stream.remove(slot);
    }
    for (const stream of this.streams) if (stream.members.size === 0) stream.close();
    this.streams = this.streams.filter((stream) => stream.members.size > 0);
    for (const slot of wanted) if (!slot.stream) this.place(slot);
    // Every stream that changes closes before any opens: a feed that moved is never in two at once.
    const changed = this.streams.filter((stream) => stream.changed());
    for (const stream of changed) { stream.forced = false; stream.closeSource(); }
    for (const stream of changed) stream.connect([...stream.members]);
  }

  /// A feed without a stream goes in the first with room, one not waiting out a backoff if there is one
  /// (a new feed need not wait for another's failure), else in a new stream.
  place(slot) {
    const room = this.streams.filter((s) => s.members.size < this.maxStreamFeeds);
    let stream = room.find((s) => !s.retryTimer) || room[0];
    if (!stream) { stream = new Stream(this); this.streams.push(stream); }
    stream.add(slot);
  }

  /// The server refused `sent` feeds in one stream, naming its limit: true if that is a usable, lower one.
  lowerLimit(value, sent) {
    if (!Number.isInteger(value) || value < 1 || value >= sent) return false;
    this.maxStreamFeeds = Math.min(this.maxStreamFeeds, value);
    return true;
  }

  /// The server ended a feed's part of its stream: the stream no longer carries it.
  left(slot) {
    if (slot.stream) slot.stream.left(slot);
  }

  onDeleted(slot, data) {
    this.left(slot);
    slot.endOutage(true);
    for (const sub of slot.subs.values()) sub.send({ type: 'event', event: 'deleted', data, id: null });
    slot.setState('closed');
    this.drop(slot);
  }

  drop(slot) {
    this.clearTimeout(slot.timer);
    if (slot.outage) this.clearTimeout(slot.outage.timer);
    if (this.feeds.get(slot.feed) === slot) this.feeds.delete(slot.feed);
    for (const [key, s] of this.subs) if (s === slot) this.subs.delete(key);
    slot.subs.clear();
  }

  /// One message from `client`; `send(message)` reaches that client.
  handle(client, message, send) {
    const key = `${client}/${message.sub}`;
    switch (message.type) {
      case 'subscribe': {
        this.unsubscribe(key);
        // One invalid name would make the server refuse the whole stream, every other feed with it:
        // it is refused here, to its subscription only, and never listed.
        if (!isFeedName(message.feed)) {
          send({ type: 'state', state: 'closed', status: 400, detail: invalidFeedDetail(message.feed), sub: message.sub, feed: message.feed });
          return;
        }
        let slot = this.feeds.get(message.feed);
        const fresh = !slot;
        if (fresh) { slot = new FeedSlot(this, message.feed); this.feeds.set(message.feed, slot); }
        const positioned = typeof message.id === 'string' && Number.isInteger(message.version);
        const sub = {
          send: (m) => send({ ...m, sub: message.sub, feed: message.feed }),
          history: positioned ? message.history ?? null : null, version: positioned ? message.version : null, id: positioned ? message.id : null,
          stale: Boolean(message.stale), // told of an outage (by another hub) and not yet of its end
        };
        slot.subs.set(key, sub);
        this.subs.set(key, slot);
        // The first tab's position is where the feed resumes; a tab that is behind it and that the log
        // cannot serve makes it resume from that tab's position instead; one of another history, or
        // without a position, makes it start afresh (a snapshot for every tab of the feed).
        if (fresh) {
          slot.reposition(positioned ? sub : null);
          sub.send({ type: 'state', state: slot.state });
          slot.joinOutage(sub);
          this.schedule();
        } else if (!slot.catchUp(sub)) {
          slot.reposition(sub.history === slot.history && sub.version < slot.version ? sub : null);
          sub.send({ type: 'state', state: slot.state });
          slot.joinOutage(sub);
          this.force(slot);
        } else {
          this.schedule(); // a feed that had no subscription left and is still in the stream: nothing changes
        }
        return;
      }
      case 'unsubscribe':
        return this.unsubscribe(key);
      case 'many': // the messages a tab sent in one task, as one: its subscriptions open one stream
        for (const m of message.messages) this.handle(client, m, send);
        return;
      case 'resync': { // the tab could not apply what it got: the feed is asked for afresh (a snapshot)
        const slot = this.subs.get(key);
        if (slot && !slot.ended) { slot.reposition(null); this.force(slot); }
        return;
      }
      case 'retry': { // the tab has a new token: ask now for a refused feed, or reconnect its failed stream now
        const slot = this.subs.get(key);
        if (slot) this.retryNow([slot]);
        return;
      }
      case 'token': // a new token for the streams' URLs: every stream reconnects, every feed from its position
        this.token = message.token || null;
        this.retryNow([...this.feeds.values()]);
        for (const stream of this.streams) stream.forced = true;
        this.schedule();
        return;
      default:
    }
  }

  /// A feed that did not exist is due to be asked for again: every such feed is asked for in the same
  /// sync (one reconnect per stream they join, not one per missing feed).
  retryMissing() {
    for (const slot of this.feeds.values()) {
      if (!slot.ended || slot.ended.event !== 'notfound') continue;
      this.clearTimeout(slot.timer);
      slot.timer = 0;
      slot.ended = null;
    }
    this.schedule();
  }

  /// Asks again now for the refused feeds among `slots`, and reconnects now the failed streams that carry them.
  retryNow(slots) {
    let changed = false;
    for (const slot of slots) changed = slot.unrefuse() || changed;
    for (const stream of new Set(slots.map((slot) => slot.stream))) if (stream) changed = stream.retryNow() || changed;
    if (changed) this.schedule();
  }

  unsubscribe(key) {
    const slot = this.subs.get(key);
    if (!slot) return;
    this.subs.delete(key);
    slot.subs.delete(key);
    if (slot.subs.size === 0) { this.drop(slot); this.schedule(); } // a feed nobody shows leaves its stream
  }

  /// The client went away (its tab closed): all its subscriptions end.
  detach(client) {
    for (const key of [...this.subs.keys()]) if (key.startsWith(`${client}/`)) this.unsubscribe(key);
  }

  /// Ends every stream and every subscription (the hub is handed over or the tab leaves).
  closeAll() {
    for (const stream of this.streams) stream.close();
    this.streams = [];
    for (const slot of this.feeds.values()) { this.clearTimeout(slot.timer); if (slot.outage) this.clearTimeout(slot.outage.timer); }
    this.feeds.clear();
    this.subs.clear();
  }
}
