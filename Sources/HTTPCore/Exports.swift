// The one monotonic clock (`MonotonicClock`): every user of the pure HTTP layer measures on it, so
// importing the layer brings it along.
@_exported import Timekeeping
