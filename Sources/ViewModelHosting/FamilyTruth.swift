/// Where a family member's state comes from when it is made again after a drop or a restart, with a
/// store for members (`--data`: ``MemberStore``) or a store several instances share (`--redis`, where
/// any instance makes it). Either way its history goes on: a client that comes back with its last
/// event id gets the batches it missed, not a snapshot. Under `--redis`, a member live on another
/// instance is taken as the store holds it, whatever the truth (decision 0008).
///
/// The rule for writes (docs/view-models.md, "Writes and truth"): no acknowledged write is undone when a
/// member is made again. With ``kept`` (the default) what `PATCH`, actions and ``ViewModelFamily/update(_:_:)``
/// changed is what comes back. With ``program`` the loader's render is the truth, so a `PATCH` (which the
/// program cannot see) is refused with ``ViewModelError/patchUndoneByLoader(feed:family:)``; an action must
/// write the program's own data, which the loader reads (or merge ``FamilyMember/kept``).
public enum FamilyTruth: Sendable, Equatable {
    /// The program's data is the truth (a home feed computed from the app's database): the loader runs
    /// on every make, and its render is diffed against the member's last published snapshot. `PATCH` is
    /// refused (it would be undone by the next make); the loader sees the state kept in
    /// ``FamilyMember/kept``.
    case program
    /// DiffStream keeps the state (a user's to-do list, a home feed the user changes): the state kept is
    /// restored, and the loader runs only for a key with nothing kept (under `--redis` it runs on every
    /// make, for the sources it attaches, and its render is used only for a key with nothing kept).
    case kept
}
