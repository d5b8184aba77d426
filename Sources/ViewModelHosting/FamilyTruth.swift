/// Where a family member's state comes from when it is made again after a drop or a restart, with a
/// store for members (`--data`: ``MemberStore``) or a store several instances share (`--redis`, where
/// any instance makes it). Either way its history goes on: a client that comes back with its last
/// event id gets the batches it missed, not a snapshot. Under `--redis`, a member live on another
/// instance is taken as the store holds it, whatever the truth (decision 0008).
public enum FamilyTruth: Sendable, Equatable {
    /// The program's data is the truth (a home feed computed from the app's database): the loader runs
    /// on every make, and its render is diffed against the member's last published snapshot.
    case program
    /// DiffStream keeps the state (a user's to-do list): the state kept is restored, and the loader
    /// runs only for a key with nothing kept (under `--redis` it runs on every make, for the sources it
    /// attaches, and its render is used only for a key with nothing kept).
    case kept
}
