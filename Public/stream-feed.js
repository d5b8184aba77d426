// DiffStream: one feed of the StreamHub (stream-hub.js): where the feed stands, the snapshot and the
// batches after it that catch up a tab that joins late or comes from another hub, the tabs subscribed
// to it, and what the server said of it (refused, unavailable). It knows nothing of the EventSource
// that carries it (stream-source.js); the hub and that stream call it with the feed's events.
import { HUB_LOG_LIMIT, HUB_LOG_CHARS, OUTAGE_GRACE_MS, backoff } from './stream-limits.js';

/// One feed of the hub's streams and the subscriptions (tabs) it serves.
///
/// Position: `history`/`version`/`lastEventId` is where the feed stands (the last event received, or
/// the position it resumes from). `snapshot` is the last snapshot received and `log` the batches after
/// it (or, once the log overflowed or after a resume, the batches since some point), so a tab that
/// joins late gets a snapshot and the batches after it, and one that was ahead or behind gets only
/// what it misses.
export class FeedSlot {
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
