// DiffStream: the protocol as pure functions, for browsers and Node alike (no DOM, no network).
//
//   applyOps(sections, ops)        → the sections after a batch's operations (docs/protocol.md, "Operations")
//   new FeedState(feed).apply(type, data, id)
//                                  → what a snapshot or a batch does to what the client holds
//   eventsURL(base, feeds, token, presenceID) → the URL of one event stream for many feeds (`GET /events?feed=…`)
//   isFeedName(feed)               → whether the server takes `feed` as a feed's name
//   unreachableDetail(server, page) → what to say when the server gives no answer (and `--allow-origin`)
//
// Described in docs/client-js-protocol.md; tested in Node by checks/browser/diffstream_protocol.test.mjs.

/// A batch that cannot be applied to the sections it was given: a missing anchor or target, a
/// duplicate id, an unknown operation. The client holds something other than what the server thinks.
export class ProtocolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ProtocolError';
  }
}

const OPS = ['deleteSection', 'insertSection', 'moveSection', 'updateSection', 'delete', 'insert', 'move', 'update'];

/// Sections in their full form: `items` and `model` always present (the wire may omit them).
function normalized(sections) {
  if (!Array.isArray(sections)) throw new ProtocolError('a snapshot needs a list of sections');
  return sections.map((s) => ({ id: s.id, model: s.model ?? null, items: (s.items || []).map((i) => ({ id: i.id, kind: i.kind, model: i.model ?? null })) }));
}

const describe = (op) => `${op.op} of ${op.section !== undefined && op.item === undefined ? 'section' : 'item'} ${JSON.stringify(
  op.item !== undefined ? (typeof op.item === 'object' && op.item !== null ? op.item.id : op.item)
    : (typeof op.section === 'object' && op.section !== null ? op.section.id : op.section))}`;

/// Applies a batch's operations, in order, to a copy of `sections` and returns the copy (`sections`
/// is left as it was, also when an operation fails).
///
/// Throws a `ProtocolError` naming the operation when an anchor (`before`, a target section) or the
/// section or item an operation names is missing, when an inserted id already exists (item ids are
/// unique across sections), or when an operation is unknown.
///
/// - Complexity: O(n + k·m) for n items in all, k operations and m the longest section (or the number
///   of sections), with the items' sections kept in a map.
export function applyOps(sections, ops) {
  const result = normalized(sections);
  const itemSection = new Map(); // item id -> the section that holds it
  for (const section of result) for (const item of section.items) itemSection.set(item.id, section);
  const sectionIndex = (id, op, role) => {
    const i = result.findIndex((s) => s.id === id);
    if (i < 0) throw new ProtocolError(`${describe(op)}: no section ${JSON.stringify(id)}${role ? ` ${role}` : ''}`);
    return i;
  };
  const sectionNamed = (id, op, role) => result[sectionIndex(id, op, role)];
  const placeSection = (section, before, op) => {
    if (before === null || before === undefined) result.push(section);
    else result.splice(sectionIndex(before, op, 'to place it before'), 0, section);
  };
  const removeItem = (id, op) => {
    const section = itemSection.get(id);
    if (!section) throw new ProtocolError(`${describe(op)}: no item ${JSON.stringify(id)}`);
    const i = section.items.findIndex((item) => item.id === id);
    const [item] = section.items.splice(i, 1);
    itemSection.delete(id);
    return item;
  };
  const placeItem = (item, sectionId, before, op) => {
    const section = sectionNamed(sectionId, op, 'to place it in');
    if (before === null || before === undefined) section.items.push(item);
    else {
      const i = section.items.findIndex((other) => other.id === before);
      if (i < 0) throw new ProtocolError(`${describe(op)}: no item ${JSON.stringify(before)} in section ${JSON.stringify(sectionId)} to place it before`);
      section.items.splice(i, 0, item);
    }
    itemSection.set(item.id, section);
  };
  if (!Array.isArray(ops)) throw new ProtocolError('a batch needs a list of ops');
  for (const op of ops) {
    switch (op && op.op) {
      case 'deleteSection': {
        const [section] = result.splice(sectionIndex(op.section, op), 1);
        for (const item of section.items) itemSection.delete(item.id);
        break;
      }
      case 'insertSection': {
        const { id, model } = op.section || {};
        if (result.some((s) => s.id === id)) throw new ProtocolError(`${describe(op)}: a section ${JSON.stringify(id)} exists already`);
        placeSection({ id, model: model ?? null, items: [] }, op.before, op);
        break;
      }
      case 'moveSection': {
        const [section] = result.splice(sectionIndex(op.section, op), 1);
        placeSection(section, op.before, op);
        break;
      }
      case 'updateSection':
        sectionNamed(op.section, op).model = op.model ?? null;
        break;
      case 'delete':
        removeItem(op.item, op);
        break;
      case 'insert': {
        const { id, kind, model } = op.item || {};
        if (itemSection.has(id)) throw new ProtocolError(`${describe(op)}: an item ${JSON.stringify(id)} exists already (in section ${JSON.stringify(itemSection.get(id).id)})`);
        placeItem({ id, kind, model: model ?? null }, op.section, op.before, op);
        break;
      }
      case 'move':
        placeItem(removeItem(op.item, op), op.section, op.before, op);
        break;
      case 'update': {
        const section = itemSection.get(op.item);
        if (!section) throw new ProtocolError(`${describe(op)}: no item ${JSON.stringify(op.item)}`);
        const item = section.items.find((other) => other.id === op.item);
        item.kind = op.kind;
        item.model = op.model ?? null;
        break;
      }
      default:
        throw new ProtocolError(`unknown operation ${JSON.stringify(op && op.op)} (known: ${OPS.join(', ')})`);
    }
  }
  return result;
}

/// What one client holds of one feed, and the rule for what comes next (docs/protocol.md, "One
/// stream for many feeds"): a batch of the same history whose `from` is the version held is applied;
/// one whose `version` is not past it is a duplicate (skipped); anything else is a gap: resync.
///
/// `apply(type, data, id)` returns `{result}`:
/// - `'snapshot'`: a snapshot replaced what was held;
/// - `'applied'` with `ops`: the batch was applied (the caller renders `ops` in order);
/// - `'duplicate'`: the batch was held already (it came twice around a reconnect), nothing changed;
/// - `'resync'` with `reason`: nothing changed, and the client must get a fresh snapshot (resubscribe
///   without a position). The state is cleared (`version` null), so later batches are resyncs too
///   until the snapshot arrives.
///
/// `apply('unavailable', data)` and `apply('available', data)` (a server that cannot reach its store,
/// Redis, and then can again; these events carry no id) set and clear `stale` (`{detail}` or null) and
/// change nothing else: not the sections, not the version, not `lastEventId` (the position to resume
/// from). They return `{result: 'unavailable', detail}` / `{result: 'available'}`, or `{result:
/// 'duplicate'}` when `stale` already said so. `reset()` keeps `stale` (it is the server's state, not the
/// feed's); a new FeedState starts without it.
export class FeedState {
  constructor(feed) {
    this.feed = feed;
    this.history = null;
    this.version = null;
    this.sections = null;
    this.lastEventId = null;
    this.stale = null; // {detail} while the server says the feed is unavailable
  }

  /// Forgets what is held: the next batch is a resync, the next snapshot starts afresh.
  reset() {
    this.history = null;
    this.version = null;
    this.sections = null;
    this.lastEventId = null;
  }

  apply(type, data, id = null) {
    if (type === 'unavailable') {
      if (this.stale) return { result: 'duplicate' };
      const detail = (data && (data.detail || data.error)) || '';
      this.stale = { detail };
      return { result: 'unavailable', detail };
    }
    if (type === 'available') {
      if (!this.stale) return { result: 'duplicate' };
      this.stale = null;
      return { result: 'available' };
    }
    if (type === 'snapshot') {
      this.sections = normalized(data.sections || []);
      this.history = data.history ?? null;
      this.version = data.version;
      this.lastEventId = id;
      return { result: 'snapshot' };
    }
    if (type !== 'batch') throw new TypeError(`FeedState.apply takes a snapshot, a batch, unavailable or available, not ${JSON.stringify(type)}`);
    const resync = (reason) => { this.reset(); return { result: 'resync', reason }; };
    if (this.version === null) return resync('a batch before any snapshot');
    if ((data.history ?? null) !== this.history) return resync(`a batch of another history (${data.history}, holding ${this.history})`);
    if (data.from === this.version) {
      let sections;
      try {
        sections = applyOps(this.sections, data.ops);
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        return resync(`the batch to ${data.version} does not apply: ${error.message}`);
      }
      this.sections = sections;
      this.version = data.version;
      this.lastEventId = id;
      return { result: 'applied', ops: data.ops };
    }
    if (data.version <= this.version) return { result: 'duplicate' };
    return resync(`a gap: the batch goes from ${data.from} to ${data.version}, holding ${this.version}`);
  }

  /// The feed as a snapshot: `{feed, history, version, sections}` (null sections before the first).
  /// While `stale`, that is the last state received, which may be out of date.
  get snapshot() {
    return { feed: this.feed, history: this.history, version: this.version, sections: this.sections };
  }
}

/// Whether `feed` is a valid feed name (docs/protocol.md): 1 to 64 characters of `A-Z a-z 0-9 . _ -`,
/// not starting with a dot. The server refuses a whole multi-feed stream (`400 invalid feed`) for one
/// invalid name, so a client checks each name before it lists it.
export function isFeedName(feed) {
  return typeof feed === 'string' && /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/.test(feed);
}

/// Why `feed` is refused, in the words of the server's `400 invalid feed`.
export function invalidFeedDetail(feed) {
  return `'${String(feed).slice(0, 80)}' is not a feed id (1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot)`;
}

/// The event-stream id to resume `feed` from, as the multi-feed route wants it (`NAME@ID`). An id the
/// multi-feed stream sent starts with the name already; one from the single-feed route gets it.
export function streamPosition(feed, lastEventId) {
  if (!lastEventId) return null;
  return lastEventId.startsWith(`${feed}@`) ? lastEventId : `${feed}@${lastEventId}`;
}

/// The URL of one event stream carrying `feeds` (`[{feed, lastEventId}]`, in order), each resuming
/// from its `lastEventId` when it has one: `${base}/events?feed=NAME@ID&feed=NAME…`, plus
/// `authorization=TOKEN` when a token is given (for a stream that cannot carry the cookie), and
/// `presence-id=ID` when one is given (the id that keeps an anonymous visitor one present user across
/// the stream's reopens: docs/protocol.md "Who is here").
/// `base` is an origin (or '' for the page's own), with or without a trailing slash.
export function eventsURL(base, feeds, token = null, presenceID = null) {
  const query = feeds.map(({ feed, lastEventId }) => {
    const position = streamPosition(feed, lastEventId);
    return `feed=${encodeURIComponent(feed)}${position ? `@${encodeURIComponent(position.slice(feed.length + 1))}` : ''}`;
  });
  if (token) query.push(`authorization=${encodeURIComponent(token)}`);
  if (presenceID) query.push(`presence-id=${encodeURIComponent(presenceID)}`);
  return `${(base || '').replace(/\/+$/, '')}/events?${query.join('&')}`;
}

/// What to tell a page whose server gave no answer to several tries in a row (the transport's state
/// `unreachable`). `serverOrigin` and `pageOrigin` are origins (`http://host:port`). A page on another
/// origin than the server is refused by CORS unless the server was started with `--allow-origin` for
/// it, and a page sees that refusal only as a network error, the same as a server that is down: so the
/// words name the flag then. The transport goes on trying either way.
export function unreachableDetail(serverOrigin, pageOrigin = null) {
  const said = `no answer from the DiffStream server at ${serverOrigin} after several tries (still trying)`;
  if (!pageOrigin || pageOrigin === serverOrigin) return `${said}: is it running?`;
  return `${said}: it is down, or it refuses this page's origin ${pageOrigin}; start it with --allow-origin ${pageOrigin} `
    + '(a browser reports a refusal by CORS to a page only as a network error)';
}
