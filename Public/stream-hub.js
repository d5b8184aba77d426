// DiffStream page: the hub that holds ONE event stream per feed and relays it to every subscribed tab.
// It runs inside the SharedWorker (stream-worker.js), or inside the one elected tab (streams.js), or in a
// lone tab. It touches no DOM and no globals: EventSource, fetch and timers are injected, so it can be
// tested without a browser (tests/browser/stream_hub.test.js).
'use strict';

/// Batches kept per feed after the last snapshot, to catch up a tab that joins or takes over: at most
/// this many, and at most this many characters of JSON in all.
const HUB_LOG_LIMIT = 256;
const HUB_LOG_CHARS = 4 * 1024 * 1024;
/// States of a stream the server refused (EventSource gave up); a `retry` reopens these at once.
const REFUSED = ['error', 'unauthorized', 'forbidden'];

/// `ds1.<history>.<version>` → `ds1.<history>`: two ids of one history have comparable versions.
/// The page treats ids as opaque otherwise (docs/protocol.md); an id of another shape has no history.
function historyOf(id) {
  if (typeof id !== 'string') return null;
  const dot = id.lastIndexOf('.');
  return dot > 0 ? id.slice(0, dot) : null;
}

/// One feed's stream and the subscriptions (tabs) it serves.
///
/// Position: `history`/`version` is where the stream stands (the last event received, or the id it
/// resumed from). `snapshot` is the last snapshot received and `log` the batches after it (or, once
/// the log overflowed or after a resume, the batches since some point), so a tab that joins late gets
/// a snapshot and the batches after it, and a tab that was ahead or behind gets only what it misses.
class FeedStream {
  constructor(hub, feed) {
    this.hub = hub;
    this.feed = feed;
    this.subs = new Map(); // key -> { send, history, version }
    this.source = null;
    this.history = null;
    this.version = null;
    this.lastEventId = null;
    this.snapshot = null; // { data, id }
    this.log = [];        // [{ data, id, size }]
    this.logChars = 0;
    this.state = 'connecting';
    this.ended = null;    // 'unauthorized' after an expired stream: no retry until asked
    this.retries = 0;
    this.retryTimer = 0;
    this.generation = 0;  // events of a stream we closed are ignored
  }

  /// Opens the stream, resuming after `resume` ({ id, version }: the id goes as the query form of
  /// Last-Event-ID) or, without one, fresh (its first event is a snapshot).
  open(resume) {
    this.close();
    const g = ++this.generation;
    this.ended = null;
    this.snapshot = null;
    this.clearLog();
    const from = resume && historyOf(resume.id) !== null && Number.isInteger(resume.version) ? resume : null;
    this.history = from && historyOf(from.id);
    this.version = from && from.version;
    this.lastEventId = from && from.id;
    let url = `/feeds/${encodeURIComponent(this.feed)}/events`;
    if (this.lastEventId) url += `?lastEventId=${encodeURIComponent(this.lastEventId)}`;
    const source = new this.hub.EventSource(url);
    this.source = source;
    this.hub.opened(this.feed, url);
    const on = (type, handler) => source.addEventListener(type, (event) => {
      if (g !== this.generation) return;
      let data;
      try {
        data = JSON.parse(event.data || '{}');
      } catch (error) { // not ours to guess at: subscribe afresh, as the page always did
        console.warn(`could not read the ${type} of ${this.feed} (${error.message}); subscribing afresh`);
        this.open(null);
        return;
      }
      handler(data, event.lastEventId || null, (event.data || '').length);
    });
    on('snapshot', (data, id) => this.onSnapshot(data, id));
    on('batch', (data, id, size) => this.onBatch(data, id, size));
    on('deleted', (data) => this.onDeleted(data));
    on('unauthorized', (data) => this.onUnauthorized(data));
    source.addEventListener('error', () => {
      if (g !== this.generation) return;
      if (source.readyState === 2 /* CLOSED */) this.failed(g);
      else this.setState('reconnecting'); // EventSource retries by itself and sends Last-Event-ID
    });
  }

  clearLog() {
    this.log = [];
    this.logChars = 0;
  }

  close() {
    this.generation++;
    this.hub.clearTimeout(this.retryTimer);
    if (this.source) { this.source.close(); this.source = null; }
  }

  setState(state, info = {}) {
    this.state = state;
    this.stateInfo = info;
    for (const sub of this.subs.values()) sub.send({ type: 'state', state, ...info });
  }

  deliver(sub, event, data, id) {
    sub.send({ type: 'event', event, data, id });
    if (event === 'snapshot' || event === 'batch') { sub.history = historyOf(id); sub.version = data.version; }
  }

  onSnapshot(data, id) {
    this.snapshot = { data, id };
    this.clearLog();
    this.history = historyOf(id);
    this.version = data.version;
    this.lastEventId = id;
    this.retries = 0;
    this.state = 'open';
    for (const sub of this.subs.values()) this.deliver(sub, 'snapshot', data, id);
  }

  onBatch(data, id, size = 0) {
    const history = historyOf(id);
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
    this.retries = 0;
    this.state = 'open';
    for (const sub of this.subs.values()) {
      // A tab that already holds this version of this history (it was ahead of where we resumed) skips it.
      if (sub.history === history && sub.version !== null && data.version <= sub.version) continue;
      this.deliver(sub, 'batch', data, id);
    }
  }

  onDeleted(data) {
    this.close();
    for (const sub of this.subs.values()) sub.send({ type: 'event', event: 'deleted', data, id: null });
    this.subs.clear();
    this.hub.drop(this);
  }

  /// The server ended the stream because the token expired (issue 13): no retry until a tab asks.
  onUnauthorized(data) {
    this.close();
    this.ended = 'unauthorized';
    this.state = 'expired';
    for (const sub of this.subs.values()) sub.send({ type: 'event', event: 'unauthorized', data, id: null });
  }

  /// The stream was refused, so EventSource will not retry: find out why, tell the tabs, retry later.
  async failed(g) {
    let state = 'reconnecting';
    const info = {};
    try {
      const response = await this.hub.fetch(`/feeds/${encodeURIComponent(this.feed)}`, { cache: 'no-store' });
      if (response.status >= 400 && response.status < 500) {
        state = response.status === 401 ? 'unauthorized' : response.status === 403 ? 'forbidden' : 'error';
        info.status = response.status;
        const body = await response.json().catch(() => ({}));
        info.detail = body.detail || body.error || String(response.status);
      }
    } catch (_) { /* the server is away: keep trying */ }
    if (g !== this.generation) return;
    this.setState(state, info);
    const delay = Math.min(30000, 2000 * 2 ** this.retries++);
    this.retryTimer = this.hub.setTimeout(() => { if (g === this.generation) this.open(null); }, delay);
  }

  /// What a tab that joins (or rejoins after a takeover) needs to be current; false if nothing we hold serves it.
  catchUp(sub) {
    if (this.ended) { sub.send({ type: 'event', event: this.ended, data: { feed: this.feed }, id: null }); return true; }
    const served = this.replay(sub);
    // After what we hold: a tab that joins while the server is away shows it, then that we are reconnecting.
    if (served && this.state !== 'open' && this.state !== 'connecting') sub.send({ type: 'state', state: this.state, ...this.stateInfo });
    return served;
  }

  replay(sub) {
    if (this.version === null) return true; // a fresh stream: its snapshot is on the way
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

/// Holds one stream per feed for any number of clients (tabs); each client has subscriptions `sub`.
/// Messages in: subscribe {feed, sub, version, id}, unsubscribe {sub}, resync {sub}, retry {sub}.
/// Messages out (to the subscription's `send`): event {event, data, id}, state {state, status?, detail?}.
class StreamHub {
  constructor({ EventSource, fetch, setTimeout, clearTimeout, onOpen } = {}) {
    this.EventSource = EventSource;
    this.fetch = fetch;
    this.setTimeout = setTimeout;
    this.clearTimeout = clearTimeout;
    this.onOpen = onOpen || (() => {});
    this.streams = new Map(); // feed -> FeedStream
    this.subs = new Map();    // `${client}/${sub}` -> FeedStream
  }

  opened(feed, url) { this.onOpen(feed, url); }

  drop(stream) {
    if (this.streams.get(stream.feed) === stream) this.streams.delete(stream.feed);
    for (const [key, s] of this.subs) if (s === stream) this.subs.delete(key);
  }

  /// One message from `client`; `send(message)` reaches that client.
  handle(client, message, send) {
    const key = `${client}/${message.sub}`;
    switch (message.type) {
      case 'subscribe': {
        this.unsubscribe(key);
        let stream = this.streams.get(message.feed);
        const fresh = !stream;
        if (fresh) { stream = new FeedStream(this, message.feed); this.streams.set(message.feed, stream); }
        const sub = {
          send: (m) => send({ ...m, sub: message.sub, feed: message.feed }),
          history: historyOf(message.id), version: historyOf(message.id) === null ? null : message.version, id: message.id || null,
        };
        stream.subs.set(key, sub);
        this.subs.set(key, stream);
        // The first tab's position is where the stream resumes; a tab that is behind it and that the
        // log cannot serve makes it resume from that tab's id instead; one of another history, or
        // without a position, makes it start afresh (a snapshot for every tab).
        if (fresh) stream.open(sub.history !== null ? sub : null);
        else if (!stream.catchUp(sub)) stream.open(sub.history === stream.history && sub.version < stream.version ? sub : null);
        return;
      }
      case 'unsubscribe':
        return this.unsubscribe(key);
      case 'resync': { // the tab could not apply what it got: a fresh subscription starts with a snapshot
        const stream = this.subs.get(key);
        if (stream) stream.open(null);
        return;
      }
      case 'retry': { // the tab has a new token: try a refused or expired stream now
        const stream = this.subs.get(key);
        if (stream && (stream.ended || REFUSED.includes(stream.state))) {
          stream.open(stream.ended && stream.lastEventId ? { id: stream.lastEventId, version: stream.version } : null);
        }
        return;
      }
      default:
    }
  }

  unsubscribe(key) {
    const stream = this.subs.get(key);
    if (!stream) return;
    this.subs.delete(key);
    stream.subs.delete(key);
    if (stream.subs.size === 0) { stream.close(); this.drop(stream); } // a feed nobody shows: its stream is closed
  }

  /// The client went away (its tab closed): all its subscriptions end.
  detach(client) {
    for (const key of [...this.subs.keys()]) if (key.startsWith(`${client}/`)) this.unsubscribe(key);
  }

  /// Ends every stream (the hub is handed over or the tab leaves).
  closeAll() {
    for (const stream of this.streams.values()) stream.close();
    this.streams.clear();
    this.subs.clear();
  }
}

if (typeof module === 'object' && module.exports) module.exports = { StreamHub, historyOf, HUB_LOG_LIMIT, HUB_LOG_CHARS };
