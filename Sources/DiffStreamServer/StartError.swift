extension DiffStreamServer {
    /// Why a server could not be created or started; ``message`` says which path or value and why.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What failed.
        public enum Kind: Sendable, Equatable {
            /// The data directory cannot be opened, locked (another server holds it) or read.
            case store
            /// Feeds in `directory` are damaged (name and reason each); start with
            /// ``Configuration/setAsideDamaged`` to skip them.
            case damagedData(directory: String, feeds: [String])
            /// The TLS certificate or key cannot be used.
            case tls
            /// The JWT secret or public key cannot be used.
            case jwt
            /// The page's directory was given but cannot be served.
            case publicDirectory
            /// The address cannot be bound.
            case listen
            /// A view model (an example) cannot be hosted.
            case hosting
            /// Redis cannot be used: a malformed URL, an evicting `maxmemory-policy`, settings that
            /// differ from the other instances', or a stop while waiting for it.
            case redis
        }

        /// What failed.
        public var kind: Kind
        /// What failed, in words a user can act on.
        public var message: String

        /// An error of `kind`, explained by `message`.
        public init(_ kind: Kind, _ message: String) {
            self.kind = kind
            self.message = message
        }

        public var description: String { message }
    }
}
