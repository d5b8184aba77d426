import DiffStreamJSON
import FeedStorage

/// The registry's verbs before it had one per job (issue 36); gone in the next release
/// (docs/upgrading.md).
extension FeedRegistry {
    @available(*, deprecated, message: "use read(_:), which throws the store's error")
    public func feed(_ name: String) async -> Feed? {
        try? await read(name)
    }

    @available(*, deprecated, renamed: "read(_:)")
    public func lookup(_ name: String) async throws(StoreError) -> Feed? {
        try await read(name)
    }

    @available(*, deprecated, renamed: "read(_:)")
    public func latest(_ name: String) async throws(StoreError) -> Feed? {
        try await read(name)
    }

    @available(*, deprecated, renamed: "read(_:)")
    public func latest(_ names: [String]) async -> [Result<Feed?, StoreError>] {
        await read(names)
    }

    @available(*, deprecated, renamed: "write(_:snapshot:viewState:hosted:options:)")
    public func put(_ name: String, snapshot: WireSnapshot, viewState: [UInt8]? = nil, hosted: Bool = false) async throws(FeedWriteError) -> (created: Bool, version: Int, operations: Int) {
        let result = try await write(name, snapshot: snapshot, viewState: viewState, hosted: hosted)
        return (result.created, result.version, result.operations)
    }
}
