import FeedCore
import HTTPAPI
import ViewModelHosting
import Foundation
import JWTKit

/// Keys and token builders shared by the token and authorizer tests.
enum TokenFixtures {
    static let secret = Array("a-test-secret-of-at-least-32-bytes!!".utf8)
    static let otherSecret = Array("another-secret-of-at-least-32-bytes".utf8)
    /// A 2048-bit RSA key made with `openssl genrsa 2048` for these tests only.
    static let rsaPrivateKeyPEM = """
-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDJq6iRCA2gDJB6
JfFnSi+Vasy2pyG3zdKb56jov5fLYuw6Ez/xFL3HQ4Wk3Y1LhxVwEpmFauQ7znmD
CsRKiM/11Krvvrqrx96AunJVrloMveDBmri4lruK62uu6CVWSMqQ4Aqurw75ye87
eqOpG83uIj2CxJ9siD02ADQ6pHPpy1yK6ZoDTBmEMTtx+VLnTRMmp/TS5FdiK98d
tWY/E9mtCzHmldMr8vjuzvf2EvJiamHG7BvBoYoKHrVAfb/cro/0Ojw8LRMRZhlH
7WJRWWaiBlkhoHPLt2s0jDR8u65MCUVwTQvXKh+T3OBh8ZFlgk7rnn+z6DECsLZW
qru6w90vAgMBAAECggEAX4rgPumiTt90+TGNpyIp3e9tkeEnY8VykGMVjkLqvrQc
dz0Ub3okmMlAAQXngU87lE9zhRZJj533ymHo8ejUIUKCQzfIh0aW/sSWE0qZJe01
FHPhLK5Ypm13JDOeML0mnrFNzkloXmXRXYvyClV+X+G/43qUjt4Spck99URhF/Ll
YoQ1R9fCo59yU7tr6Z5D1YLY3Q4m5D4eS41blHLO8cY3UHROynp1L3ZxQbR4yOa9
O6MG/PbRtMWNg6jVfXVvVsGnjfM1NCTpBJl4KjMmiZrpioDj0EQk0SG1N52lZ7OZ
quhR/erJbtmln5IthKCLCgyr1ffFB4xlrFwVQGGklQKBgQDtX1jmf4qUsKnQ56Bi
0urvRvOHO8w7u3dPpsWbpwjNoP9mErju7bLc650XssF0Z61Q/81Dtlfu6v/ES/XR
kH3kHfvRROPgxEBpD1vDa88kGn23bDDwCxNc9hAzUHUi3jYoWANe9geoFm/7vtVQ
vlUrqtQnfSMlsCChtWh3F5yvNQKBgQDZfxV4fcHaWagPJ1ZhcB0M18NhuNuli1CW
ZKwhZo58/ReXFgNHbyvKv7DL0V9U6lruM+aituVOZTtC0dc4IGR19h6jbp7CaVx5
5Lx5BnPBwipeHIeTV8NAIy4pyTT4S5hF6qewAJzEvewpXOiWbdjhBeXIBGlXblZW
fopc6EGzUwKBgGaR/9lCHYDYwdh6bkyltU0FzK+QAFWDUTAC8Xqr99rbCeFyj6T2
44Yg7bXS0VNahYLttiXfQioEM9b/t84BcNTEvA6WhR2Xz/lV4KIWEOEZ7V74CkF/
l7NgxGlYB/W0LZTLS1GaYH6ai3Mt6AFG7Yi7/Ya+xRRBAii+OdDUTClNAoGAWZkG
yUpVL5Q7rXJxHVbIQOAptvomUf4gRrRWTLQpAshojW8eDrF3guCQ/oXUFfEtYG+1
FVbvA+qkDRTQ6mg9unKXkJAjisdIt1ZJZjoIOcu5FGgAWeyPnL5haAlhbuAFbNgM
GG9IJaxvu2Jw1neOHrUFQe6/Tqs/mgYrDbcISc0CgYAtnOJnT//+ylv73u07Aolk
6GopZN7d15aO+hP5h9z66TuIFzntX6lB8xucQ4echGRzYxSkiebI6Jv4JDPCeAmW
xOR8YDszmr0iSbTeNpfDTOwbaX/fAYLiciM+RP+DZMe3XD8l8bow8xQSn0H5vcm6
2itTyvFwcJ3JX6dSv3E20Q==
-----END PRIVATE KEY-----
"""
    static let now = 1_800_000_000.0

    /// Claims as a test wants them, including ones `diffstream token` never makes.
    struct Claims: JWTPayload {
        struct Rights: Codable, Sendable {
            var subscribe: [String]?
            var publish: [String]?
        }
        var exp: Double?
        var nbf: Double?
        var sub: String?
        var name: String?
        var diffstream: Rights?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func claims(subscribe: [String] = [], publish: [String] = [], exp: Double? = now + 60, nbf: Double? = nil, sub: String? = nil, name: String? = nil) -> Claims {
        Claims(exp: exp, nbf: nbf, sub: sub, name: name, diffstream: .init(subscribe: subscribe, publish: publish))
    }

    static func hs256(_ claims: Claims, secret: [UInt8] = secret, header: JWTHeader = ["typ": "JWT"]) async throws -> String {
        try await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256).sign(claims, header: header)
    }

    static func rs256(_ claims: Claims) async throws -> String {
        try await JWTKeyCollection().add(rsa: Insecure.RSA.PrivateKey(pem: rsaPrivateKeyPEM), digestAlgorithm: .sha256).sign(claims)
    }

    static var rsaPublicKeyPEM: String { get throws { try Insecure.RSA.PrivateKey(pem: rsaPrivateKeyPEM).publicKey.pemRepresentation } }

    /// base64url without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A token with any header and payload JSON and the given signature bytes (for `alg: none` and such).
    static func raw(header: String, payload: String, signature: [UInt8] = []) -> String {
        base64URL(Array(header.utf8)) + "." + base64URL(Array(payload.utf8)) + "." + base64URL(signature)
    }
}
