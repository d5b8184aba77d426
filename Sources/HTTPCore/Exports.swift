// The one monotonic clock (`MonotonicClock`): every user of the pure HTTP layer measures on it, so
// importing the layer brings it along.
@_exported import Timekeeping
// The event types live below both HTTPCore and the feed core (issue 53): `import HTTPCore` keeps
// bringing them, as it did when they were HTTPCore's own.
@_exported import ServerSentEvents
