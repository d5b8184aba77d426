extension Server {
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
            /// The shared store (``Configuration/sharing``) cannot be used; for Redis: a malformed URL, an
            /// evicting `maxmemory-policy`, or settings that differ from the other instances'.
            case redis
            /// A stop (SIGINT, SIGTERM) came while the start waited for the shared store: not a failure.
            case stopped
        }

        /// A cause the program can explain in its own terms (its flags, its settings), when the failure
        /// has one. ``message`` names no flag; the `diffstream` command adds `--port` or `--data`.
        public enum Cause: Sendable, Equatable {
            /// Another program listens on the address (`EADDRINUSE`).
            case addressInUse(host: String, port: UInt16)
            /// Another server holds the data directory's lock.
            case dataDirectoryLocked(path: String)
        }

        /// What failed.
        public var kind: Kind
        /// What failed, in words a user can act on.
        public var message: String
        /// The cause, when it is one a program may want to explain in its own terms.
        public var cause: Cause?

        /// An error of `kind`, explained by `message`.
        public init(_ kind: Kind, _ message: String, cause: Cause? = nil) {
            self.kind = kind
            self.message = message
            self.cause = cause
        }

        public var description: String { message }
    }
}
