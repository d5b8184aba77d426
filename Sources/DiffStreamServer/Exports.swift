// What a program needs to write a view model, with only `import DiffStreamServer`:
// `HostedViewModel`, `HostedAction`, `ViewModelHost`, `InvalidInput` (ViewModelHosting); `Snapshot`,
// `Section` and the result builders (DiffStream); `WireItemConvertible`, `WireItem`, `JSONValue`
// (DiffStreamJSON).
@_exported import DiffStream
@_exported import DiffStreamJSON
// The feed core, hosting and the HTTP API, each by its own name (the `FeedServer` umbrella, which
// re-exports the same three, is deprecated: issue 53).
@_exported import FeedCore
@_exported import HTTPAPI
@_exported import ViewModelHosting
// Who is here (issue 55): `PresenceSnapshot` and `PresentUser`, what `Server.presence(of:)` yields.
@_exported import Presence
