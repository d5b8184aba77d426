/// Waits for `condition` to hold, checking it again after each `Task.yield()`: for a state another
/// task or thread brings about, with no event to await. False (for an `#expect`) if it does not hold
/// within `seconds`, so a test that waits on a bug fails rather than hangs.
public func eventually(within seconds: Int = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { return false }
        await Task.yield()
    }
    return true
}
