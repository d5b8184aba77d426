/// Whether a hosted view model's feed (each member's, for a family) has a presence feed of who is
/// watching it (issue 55, docs/protocol.md "Who is here"), and whether that shows who they are.
/// The server's `--presence` and `--presence-names` may turn presence on for any feed too.
public enum HostedPresence: Sendable, Equatable {
    /// No presence feed (unless the server's flags give one).
    case off
    /// A presence feed whose items are anonymous: only the count means something.
    case anonymous
    /// A presence feed whose items show a token's `sub` and `name`.
    case identities
}
