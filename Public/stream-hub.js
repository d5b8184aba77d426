// DiffStream: the hub that holds the event streams for every feed its tabs show (`GET /events?feed=…`,
// docs/protocol.md): one stream, or one per `maxStreamFeeds` feeds beyond that (the server's
// `--max-stream-feeds`), and relays each feed to the tabs subscribed to it. It runs inside the SharedWorker
// (stream-worker.js), or inside the one elected tab, or in a lone tab (diffstream-streams.js). It
// touches no DOM and no globals: EventSource, fetch and timers are injected, so it is tested without a
// browser (checks/browser/stream_hub.test.mjs, stream_hub_property.test.mjs).
//
// Guarantees: a tab gets each feed as one snapshot and the batches that follow it, none lost and none
// twice, also across a change of hub (a new worker or elected tab: the tabs subscribe again with the
// position they hold). A tab that adds or drops a feed reconnects the one stream that feed is in, with
// every other feed's position, so those resume where they stand (the server sends them nothing) and
// never resync; the feeds of the other streams see nothing of it.
//
// Its parts: stream-feed.js (one feed and its subscriptions), stream-source.js (one event stream) and
// stream-limits.js (the limits and delays, exported here too).
import { isFeedName, invalidFeedDetail } from './diffstream-protocol.js';
import { FeedSlot } from './stream-feed.js';
import { Stream } from './stream-source.js';
import { Poller } from './stream-poll.js';
import { MAX_POLLS } from './stream-limits.js';

export { HUB_LOG_LIMIT, HUB_LOG_CHARS, RETRY_FIRST_MS, RETRY_MAX_MS, OUTAGE_GRACE_MS, UNREACHABLE_AFTER, MAX_POLLS, LIVE_READ_TIMEOUT_MS } from './stream-limits.js';

/// Holds the event streams for all the feeds any of its clients (tabs) subscribe to: one stream while
/// they are at most `maxStreamFeeds`, more beyond (the server takes at most that many per stream); each
/// client has subscriptions `sub`, each to one feed.
///
/// Messages in: subscribe {sub, feed, history, version, id, stale, poll?, maxPolls?}, unsubscribe {sub}, resync {sub}, retry {sub},
/// token {token}, many {messages} (several of these, sent in one task). Messages out (to the subscription's `send`, with `sub` and `feed`):
/// event {event: snapshot|batch|deleted|notfound|forbidden|unauthorized|unavailable|available, data, id} and
/// state {state: connecting|open|retrying|unreachable|closed, status?, detail?} (unreachable: retrying, and
/// UNREACHABLE_AFTER tries in a row got no answer at all; the hub goes on trying). A subscription to an invalid feed name
/// (docs/protocol.md: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot) gets only state closed with
/// status 400 and the reason, and is never listed in a stream (the server would refuse the whole stream).
///
/// Options: `EventSource`, `fetch`, `setTimeout`, `clearTimeout`, `defer` (runs a function soon, after
/// the current message: queueMicrotask by default), `baseURL` (the server's origin; '' for the page's),
/// `token` (sent in the stream's URL; without one the cookie carries it), `onOpen(url)` (each stream opened),
/// `maxStreamFeeds` (most feeds in one stream: the server's `--max-stream-feeds`; a server that refuses
/// a stream as too many feeds lowers it to the limit it names), `maxPolls` (MAX_POLLS).
///
/// A feed whose first subscription asks for `poll` is followed through its cacheable log
/// (`GET /feeds/{feed}/log`, stream-poll.js) instead of the event stream, while fewer than `maxPolls`
/// feeds are (a subscription's `maxPolls` sets it: the page knows whether its server speaks HTTP/2);
/// past that, it goes in the event stream like any other. The tabs see no difference.
export class StreamHub {
  constructor({ EventSource, fetch, setTimeout, clearTimeout, defer, baseURL = '', token = null, onOpen, maxStreamFeeds = 100, maxPolls = MAX_POLLS, presenceID = null } = {}) {
    this.EventSource = EventSource;
    this.fetch = fetch;
    this.setTimeout = setTimeout;
    this.clearTimeout = clearTimeout;
    this.defer = defer || ((f) => queueMicrotask(f));
    this.baseURL = baseURL;
    this.token = token;
    /// Sent with every stream (`presence-id`): the hub's streams, reopened as tabs add feeds, are one
    /// present user on feeds with presence (docs/protocol.md "Who is here").
    this.presenceID = presenceID;
    this.onOpen = onOpen || (() => {});
    this.maxStreamFeeds = maxStreamFeeds >= 1 ? Math.floor(maxStreamFeeds) : 100;
    this.maxPolls = maxPolls >= 0 ? Math.floor(maxPolls) : MAX_POLLS;
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
    if (slot.poller) { slot.poller.start(); return; } // read again from the slot's (new) position
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
    this.syncPolls(wanted, keep);
    for (const stream of this.streams) {
      for (const slot of stream.members) if (!keep.has(slot)) stream.remove(slot);
      for (const slot of [...stream.members].slice(this.maxStreamFeeds)) stream.remove(slot);
    }
    for (const stream of this.streams) if (stream.members.size === 0) stream.close();
    this.streams = this.streams.filter((stream) => stream.members.size > 0);
    for (const slot of wanted) if (!slot.stream && !slot.poller) this.place(slot);
    // Every stream that changes closes before any opens: a feed that moved is never in two at once.
    const changed = this.streams.filter((stream) => stream.changed());
    for (const stream of changed) { stream.forced = false; stream.closeSource(); }
    for (const stream of changed) stream.connect([...stream.members]);
  }

  /// Polled feeds no longer wanted stop; a feed that asks for `poll` and is in no stream gets a Poller
  /// while there is room (a feed already in a stream stays there: moving it would cost a resync).
  syncPolls(wanted, keep) {
    for (const slot of this.feeds.values()) if (slot.poller && !keep.has(slot)) slot.poller.close();
    let polled = wanted.filter((slot) => slot.poller).length;
    for (const slot of wanted) {
      if (!slot.poll || slot.poller || slot.stream || polled >= this.maxPolls) continue;
      slot.poller = new Poller(this, slot);
      polled++;
    }
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
    if (slot.poller) slot.poller.close();
  }

  onDeleted(slot, data) {
    this.left(slot);
    slot.endOutage(true);
    for (const sub of slot.subs.values()) sub.send({ type: 'event', event: 'deleted', data, id: null });
    slot.setState('closed');
    this.drop(slot);
  }

  drop(slot) {
    if (slot.poller) slot.poller.close();
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
        if (fresh) { slot = new FeedSlot(this, message.feed); slot.poll = Boolean(message.poll); this.feeds.set(message.feed, slot); }
        if (Number.isInteger(message.maxPolls) && message.maxPolls >= 0) this.maxPolls = message.maxPolls;
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
        for (const slot of this.feeds.values()) if (slot.poller) slot.poller.start(); // from where it stands, with the new token
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
    for (const slot of slots) if (slot.poller) slot.poller.retryNow();
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
    for (const slot of this.feeds.values()) if (slot.poller) slot.poller.close();
    this.streams = [];
    for (const slot of this.feeds.values()) { this.clearTimeout(slot.timer); if (slot.outage) this.clearTimeout(slot.outage.timer); }
    this.feeds.clear();
    this.subs.clear();
  }
}
