import ArgumentParser
import Foundation
import HTTPAPI
import Timekeeping

/// `diffstream token`: signs an HS256 token (JWT) with the configured secret, for operators and tests.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Prints a signed token (JWT, HS256) for the given rights and lifetime.",
        discussion: "The secret comes from --jwt-secret-file PATH (before or after 'token'), DIFFSTREAM_JWT_SECRET_FILE or DIFFSTREAM_JWT_SECRET, as for the server. Example: diffstream token --jwt-secret-file jwt.secret --subscribe 'user-42-*' --lifetime 600. A pattern is a feed name in which * matches any run of characters.")

    @Option(help: "A feed pattern the token may read (repeatable).") var subscribe: [String] = []
    @Option(help: "A feed pattern the token may write (repeatable).") var publish: [String] = []
    @Option(help: "Seconds the token is valid for (1 to 31536000).") var lifetime: Int = 3600
    @Option(help: "The token's subject (sub claim), e.g. a user id.") var subject: String?
    /// The server's options: `--jwt-secret-file` is the server's own (given before or after `token`).
    @ParentCommand var server: DiffStreamCommand

    func run() async throws {
        guard (1...31_536_000).contains(lifetime) else {
            throw ConfigurationError(message: "--lifetime must be from 1 to 31536000 seconds, not \(lifetime)")
        }
        guard let secret = try JWTSecret.load(file: server.jwtSecretFile, environment: ProcessInfo.processInfo.environment) else {
            throw ConfigurationError(message: "no secret: give --jwt-secret-file or set DIFFSTREAM_JWT_SECRET")
        }
        let signer: JWTVerifier
        do { signer = try await JWTVerifier(hmacSecret: secret) } catch { throw ConfigurationError(message: error.description) }
        let token: String
        do {
            token = try await signer.sign(subscribe: subscribe, publish: publish, subject: subject, now: WallClock.now(), lifetime: Double(lifetime))
        } catch {
            throw ConfigurationError(message: error.description)
        }
        print(token)
    }
}
