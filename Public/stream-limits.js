// DiffStream: the limits and delays of the StreamHub (stream-hub.js), shared by its parts: how much of a
// feed's history it keeps, how long it waits before it reconnects, how long an outage may go unsaid, and
// after how many tries without an answer the server is called unreachable.

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
/// Tries of a stream in a row that got no answer at all (the stream never opened and the server gave no
/// status: it is down, or it refuses the page's origin, which a page sees only as a network error) after
/// which its feeds are told `unreachable`. The stream goes on trying; the first answer ends it. With the
/// backoff above, the third try fails about 6 s after the first.
export const UNREACHABLE_AFTER = 3;
/// The delay before the next try after `failures` failures in a row (0 for the first).
export const backoff = (failures) => Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** failures);
/// Feeds a hub follows through their log (`poll`, stream-poll.js) at most, each a request always open:
/// over HTTP/1.1 a browser opens six connections per origin, and the event stream and the page's own
/// requests need the rest. Behind a CDN that speaks HTTP/2 a page may raise it (`maxPolls`); feeds past
/// it are carried by the event stream.
export const MAX_POLLS = 4;
/// A live read of the log waits at most 20 s at the server; one without an answer after this long (a
/// connection a middlebox dropped without a word) is given up and asked again.
export const LIVE_READ_TIMEOUT_MS = 45000;
