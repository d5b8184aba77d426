import FeedCore
import HTTPAPI
import ViewModelHosting
import JWTKit
import Testing

struct JWTVerifierTests {
    typealias F = TokenFixtures

    func hmacVerifier() async throws -> JWTVerifier { try await JWTVerifier(hmacSecret: F.secret) }

    @Test func acceptsItsOwnSignedTokenWithItsRights() async throws {
        let verifier = try await hmacVerifier()
        let token = try await verifier.sign(subscribe: ["user-42-*"], publish: ["user-42-inbox"], now: F.now, lifetime: 60)
        let rights = try await verifier.verify(token, now: F.now + 30).get()
        #expect(rights == TokenRights(subscribe: [FeedPattern("user-42-*")], publish: [FeedPattern("user-42-inbox")], expires: F.now + 60 + verifier.leeway))
    }

    /// Whom the token was issued to reaches the rights as it is, whatever characters it holds.
    @Test(arguments: [("auth0|5f1c", "Ada Lovelace"), ("alice@example.com", nil), ("ü 🦊", "Zoë"), (nil, nil), (nil, "Nameless")] as [(String?, String?)])
    func carriesTheSubjectAndTheName(subject: String?, name: String?) async throws {
        let verifier = try await hmacVerifier()
        let token = try await F.hs256(F.claims(subscribe: ["home.*"], sub: subject, name: name))
        let rights = try await verifier.verify(token, now: F.now).get()
        #expect(rights.subject == subject)
        #expect(rights.name == name)
        #expect(rights.subscribe == [FeedPattern("home.*")])
    }

    @Test func refusesExpiredAndNotYetValidTokensOutsideTheLeeway() async throws {
        let verifier = try await hmacVerifier()
        let token = try await F.hs256(F.claims(exp: F.now, nbf: F.now - 100))
        #expect(try await verifier.verify(token, now: F.now + verifier.leeway).get().expires == F.now + verifier.leeway)
        #expect(await verifier.verify(token, now: F.now + verifier.leeway + 1) == .failure(.expired))
        let early = try await F.hs256(F.claims(exp: F.now + 600, nbf: F.now + 100))
        #expect(await verifier.verify(early, now: F.now) == .failure(.notYetValid))
        #expect(await verifier.verify(early, now: F.now + 100 - verifier.leeway) != .failure(.notYetValid))
    }

    @Test func refusesAForgedSignature() async throws {
        let verifier = try await hmacVerifier()
        let forged = try await F.hs256(F.claims(subscribe: ["*"]), secret: F.otherSecret)
        #expect(await verifier.verify(forged, now: F.now) == .failure(.badSignature))
        // The payload of a genuine token swapped for another: the signature no longer matches.
        let genuine = try await F.hs256(F.claims(subscribe: ["home"])).split(separator: ".")
        let widened = try await F.hs256(F.claims(subscribe: ["*"])).split(separator: ".")
        #expect(await verifier.verify("\(genuine[0]).\(widened[1]).\(genuine[2])", now: F.now) == .failure(.badSignature))
    }

    @Test func refusesAlgNoneWithOrWithoutASignature() async throws {
        let verifier = try await hmacVerifier()
        for header in [#"{"alg":"none","typ":"JWT"}"#, #"{"alg":"None"}"#, #"{"alg":"NONE"}"#] {
            let token = F.raw(header: header, payload: #"{"diffstream":{"subscribe":["*"],"publish":["*"]}}"#)
            guard case .failure(.algorithm) = await verifier.verify(token, now: F.now) else { Issue.record("\(header) accepted"); continue }
        }
    }

    @Test func refusesHS256SignedWithThePublicKey() async throws {
        let publicPEM = try F.rsaPublicKeyPEM
        let confused = try await F.hs256(F.claims(subscribe: ["*"]), secret: Array(publicPEM.utf8))
        let rsaOnly = try await JWTVerifier(hmacSecret: nil, publicKeyPEM: publicPEM)
        #expect(await rsaOnly.verify(confused, now: F.now) == .failure(.algorithm("HS256")))
        let both = try await JWTVerifier(hmacSecret: F.secret, publicKeyPEM: publicPEM)
        #expect(await both.verify(confused, now: F.now) == .failure(.badSignature))
        // The genuine RS256 token is accepted by both.
        let genuine = try await F.rs256(F.claims(subscribe: ["a"]))
        #expect(try await rsaOnly.verify(genuine, now: F.now).get().subscribe == [FeedPattern("a")])
        #expect(try await both.verify(genuine, now: F.now).get().subscribe == [FeedPattern("a")])
        // And an RS256 token is not accepted where only the secret is configured.
        #expect(await (try await hmacVerifier()).verify(genuine, now: F.now) == .failure(.algorithm("RS256")))
    }

    @Test func acceptsES256WithAP256PublicKey() async throws {
        let key = ES256PrivateKey()
        let verifier = try await JWTVerifier(hmacSecret: nil, publicKeyPEM: key.publicKey.pemRepresentation)
        #expect(verifier.algorithms == ["ES256"])
        let token = try await JWTKeyCollection().add(ecdsa: key).sign(F.claims(publish: ["x-*"]))
        #expect(try await verifier.verify(token, now: F.now).get().publish == [FeedPattern("x-*")])
        let other = try await JWTKeyCollection().add(ecdsa: ES256PrivateKey()).sign(F.claims(publish: ["x-*"]))
        #expect(await verifier.verify(other, now: F.now) == .failure(.badSignature))
    }

    @Test func aKidCannotChooseTheKey() async throws {
        let verifier = try await hmacVerifier()
        for kid in ["../../../dev/null", "' OR 1=1 --", "other"] {
            let genuine = try await F.hs256(F.claims(subscribe: ["a"]), header: ["kid": .string(kid)])
            #expect(try await verifier.verify(genuine, now: F.now).get().subscribe == [FeedPattern("a")])
            let forged = try await F.hs256(F.claims(subscribe: ["a"]), secret: F.otherSecret, header: ["kid": .string(kid)])
            #expect(await verifier.verify(forged, now: F.now) == .failure(.badSignature))
        }
    }

    @Test(arguments: ["", "abc", "a.b", "a.b.c.d", "!!.e30.", "e30.e30", "e30.e30.e30", "eyJhbGciOiJIUzI1NiJ9.!!!.abc",
                      "eyJhbGciOiJIUzI1NiJ9.e30.%%%", "W10.e30."])
    func refusesMalformedTokens(token: String) async throws {
        let result = await (try await hmacVerifier()).verify(token, now: F.now)
        switch result {
        case .failure(.malformed), .failure(.badSignature): break
        default: Issue.record("'\(token)': \(result)")
        }
    }

    @Test func refusesShortSecretsAndUnusableKeys() async throws {
        await #expect(throws: TokenConfigurationError.self) { try await JWTVerifier(hmacSecret: Array("short".utf8)) }
        await #expect(throws: TokenConfigurationError.self) { try await JWTVerifier(hmacSecret: nil, publicKeyPEM: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n") }
        await #expect(throws: TokenConfigurationError.self) { try await JWTVerifier(hmacSecret: nil, publicKeyPEM: nil) }
    }
}
