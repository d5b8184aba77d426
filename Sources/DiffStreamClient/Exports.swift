// `import DiffStreamClient` alone gives the types its public API is made of: `Snapshot` and `Operation`
// (`FeedUpdate.snapshot`, `.operations`) from DiffStream; `WireSection`, `WireItem`, `WireID` and
// `JSONModel` (the untyped form, `WireFeedUpdate`) from DiffStreamJSON.
@_exported import DiffStream
@_exported import DiffStreamJSON
