import FeedCore
import ViewModelHosting
import DiffStreamJSON
import JWTKit

/// What a valid signed token grants: the feeds it may subscribe to and publish to, and when it
/// expires; and whom it was issued to, as the token says (its `sub` and `name` claims), for rules and
/// view models that depend on the user.
public struct TokenRights: Sendable, Equatable {
    public var subscribe: [FeedPattern]
    public var publish: [FeedPattern]
    /// Seconds since 1970 after which (plus the verifier's leeway) the token is no longer accepted.
    public var expires: Double?
    /// The token's `sub` claim (RFC 7519 §4.1.2), as it is: any string the issuer chose (`auth0|x`,
    /// an email); nil when the token has none.
    public var subject: String?
    /// The token's `name` claim (OpenID Connect Core 1.0 §5.1), the user's display name; nil when none.
    public var name: String?

    public init(subscribe: [FeedPattern] = [], publish: [FeedPattern] = [], expires: Double? = nil, subject: String? = nil, name: String? = nil) {
        self.subscribe = subscribe
        self.publish = publish
        self.expires = expires
        self.subject = subject
        self.name = name
    }
}

/// Why a presented token was refused; the text goes into the `401`'s detail (never the token itself).
public enum TokenFailure: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    case algorithm(String)
    case badSignature
    case expired
    case notYetValid

    public var description: String {
        switch self {
        case .malformed(let why): "the token is malformed: \(why)"
        case .algorithm(let name): "the token's algorithm '\(name.prefix(20))' is not the one this server is configured for"
        case .badSignature: "the token's signature does not verify (bad signature)"
        case .expired: "the token has expired; get a fresh one"
        case .notYetValid: "the token is not yet valid (nbf is in the future)"
        }
    }
}

/// Checks a signed token and returns its rights.
public protocol TokenVerifying: Sendable {
    /// `now` is in seconds since 1970.
    func verify(_ token: String, now: Double) async -> Result<TokenRights, TokenFailure>
}

/// A JWT setting that cannot be used; the message says which and why.
public struct TokenConfigurationError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// Verifies (and, with an HMAC secret, signs) JWTs with `vapor/jwt-kit`.
///
/// The algorithm is chosen by the **configuration**, never by the token: each configured key sits in a
/// key collection of its own (no `kid` look-ups, no JWKS, no key taken from the token's header), and a
/// token's `alg` must name exactly that key's algorithm (`HS256` for the secret; `RS256` or `ES256` for
/// the public key). So `alg: none`, an HS256 token signed with the public key (algorithm confusion) and
/// a `kid` pointing anywhere all fail. `exp` and `nbf` (RFC 7519 §4.1.4, §4.1.5) are checked here, with
/// ``leeway`` seconds of tolerance, against the caller's clock.
public struct JWTVerifier: TokenVerifying {
    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    public let leeway: Double
    private let hmac: JWTKeyCollection?
    private let publicKey: (algorithm: String, keys: JWTKeyCollection)?

    /// The algorithms this verifier accepts, e.g. `["HS256", "RS256"]`.
    public var algorithms: [String] { (hmac == nil ? [] : ["HS256"]) + (publicKey.map { [$0.algorithm] } ?? []) }

    /// - Parameters:
    ///   - hmacSecret: the HS256 secret: at least 32 bytes (RFC 7518 §3.2).
    ///   - publicKeyPEM: an RSA (RS256, at least 2048 bits) or P-256 (ES256) public key in PEM.
    public init(hmacSecret: [UInt8]?, publicKeyPEM: String? = nil, leeway: Double = 5) async throws(TokenConfigurationError) {
        guard hmacSecret != nil || publicKeyPEM != nil else { throw TokenConfigurationError(description: "a JWT secret or public key is needed") }
        self.leeway = leeway
        if let hmacSecret {
            guard hmacSecret.count >= 32 else {
                throw TokenConfigurationError(description: "the JWT secret is \(hmacSecret.count) bytes; HS256 needs at least 32 (RFC 7518 §3.2)")
            }
            hmac = await JWTKeyCollection().add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
        } else {
            hmac = nil
        }
        if let publicKeyPEM {
            if let rsa = try? Insecure.RSA.PublicKey(pem: publicKeyPEM) {
                publicKey = ("RS256", await JWTKeyCollection().add(rsa: rsa, digestAlgorithm: .sha256))
            } else if let ec = try? ES256PublicKey(pem: publicKeyPEM) {
                publicKey = ("ES256", await JWTKeyCollection().add(ecdsa: ec))
            } else {
                throw TokenConfigurationError(description: "the JWT public key is neither an RSA (2048 bits or more) nor a P-256 public key in PEM")
            }
        } else {
            publicKey = nil
        }
    }

    public func verify(_ token: String, now: Double) async -> Result<TokenRights, TokenFailure> {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformed("expected three dot-separated parts")) }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = try? JSONParser.parse(headerBytes), case .object = header else {
            return .failure(.malformed("the header is not base64url-encoded JSON"))
        }
        guard let algorithm = header["alg"]?.stringValue else { return .failure(.malformed("the header has no alg")) }
        guard header["crit"] == nil else { return .failure(.malformed("critical header extensions are not supported (RFC 7515 §4.1.11)")) }
        let keys: JWTKeyCollection
        if algorithm == "HS256", let hmac {
            keys = hmac
        } else if let publicKey, algorithm == publicKey.algorithm {
            keys = publicKey.keys
        } else {
            return .failure(.algorithm(algorithm))
        }
        let claims: DiffStreamClaims
        do {
            claims = try await keys.verify(token, as: DiffStreamClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            return .failure(.badSignature)
        } catch {
            return .failure(.malformed("the token could not be decoded"))
        }
        if let expires = claims.exp, now > expires + leeway { return .failure(.expired) }
        if let notBefore = claims.nbf, now + leeway < notBefore { return .failure(.notYetValid) }
        return .success(TokenRights(
            subscribe: (claims.diffstream?.subscribe ?? []).map(FeedPattern.init),
            publish: (claims.diffstream?.publish ?? []).map(FeedPattern.init),
            expires: claims.exp.map { $0 + leeway }, subject: claims.sub, name: claims.name))
    }

    /// Signs an HS256 token granting `rights` from `now` for `lifetime` seconds (`diffstream token`).
    public func sign(subscribe: [String], publish: [String], subject: String? = nil, now: Double, lifetime: Double) async throws(TokenConfigurationError) -> String {
        guard let hmac else { throw TokenConfigurationError(description: "signing needs the HS256 secret (--jwt-secret-file or DIFFSTREAM_JWT_SECRET)") }
        let claims = DiffStreamClaims(
            exp: (now + lifetime).rounded(.down), nbf: nil, iat: now.rounded(.down), sub: subject, name: nil,
            diffstream: .init(subscribe: subscribe, publish: publish))
        do {
            return try await hmac.sign(claims, header: ["typ": "JWT"])
        } catch {
            throw TokenConfigurationError(description: "signing failed: \(error)")
        }
    }
}

/// The claims DiffStream reads: `{"exp", "nbf", "iat", "sub", "name", "diffstream": {"subscribe", "publish"}}`.
package struct DiffStreamClaims: JWTPayload {
    package struct Rights: Codable, Sendable {
        var subscribe: [String]?
        var publish: [String]?
    }

    package var exp: Double?
    package var nbf: Double?
    package var iat: Double?
    package var sub: String?
    package var name: String?
    package var diffstream: Rights?

    /// Times are checked by ``JWTVerifier`` against its injected clock, with leeway.
    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// base64url without padding (RFC 4648 §5), as JWTs use it (RFC 7515 §2).
package enum Base64URL {
    package static func decode(_ text: Substring) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count * 3 / 4)
        var buffer: UInt32 = 0, bits = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return bits >= 6 ? nil : output
    }
}
