// `FeedServer` is the feed core, hosting and the HTTP API together, for programs and tests that want
// all three with one import (the examples, `DiffStreamTesting`, `DiffStreamServer`). Each is a module
// of its own with one job: `FeedCore`, `ViewModelHosting`, `HTTPAPI` (docs/architecture.md).
@_exported import FeedCore
@_exported import HTTPAPI
@_exported import ViewModelHosting
