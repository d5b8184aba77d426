// What a program needs to write a view model, with only `import DiffStreamServer`:
// `HostedViewModel`, `HostedAction`, `ViewModelHost`, `InvalidInput` (FeedServer); `Snapshot`,
// `Section` and the result builders (DiffStream); `WireItemConvertible`, `WireItem`, `JSONValue`
// (DiffStreamJSON).
@_exported import DiffStream
@_exported import DiffStreamJSON
@_exported import FeedServer
