import Foundation
import HTTPTypes
import JWTKit
import ParleyTestSupport
import Projections
import Testing
import _CryptoExtras

@testable import Server

/// Who may do what: every case is one request by one caller and the status it must get.
@Suite(.onTestThreads) struct AuthorizationTests {
    struct Case: Sendable, CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var caller: String?
        var admin = false
        var json: String?
        var status: Int
        var description: String { "\(caller ?? "nobody")\(admin ? " (admin)" : "") \(method) \(path) → \(status)" }
    }

    static func c(
        _ method: HTTPRequest.Method, _ path: String, _ caller: String?, _ status: Int, admin: Bool = false,
        json: String? = nil
    ) -> Case {
        Case(method: method, path: path, caller: caller, admin: admin, json: json, status: status)
    }

    /// Members and owners succeed; others get 403 or 404; admin routes need the role.
    static let cases: [Case] = [
        // A room's details and messages only while a member; existence is private (404).
        c(.get, "/v1/rooms/r1", "alice", 200), c(.get, "/v1/rooms/r1", "bob", 200),
        c(.get, "/v1/rooms/r1", "carol", 404), c(.get, "/v1/rooms/nope", "alice", 404),
        c(.get, "/v1/rooms/r1/messages", "alice", 200), c(.get, "/v1/rooms/r1/messages", "bob", 200),
        c(.get, "/v1/rooms/r1/messages", "carol", 404),
        // Posting, reading markers, leaving: members only.
        c(.post, "/v1/rooms/r1/messages", "carol", 404, json: #"{"body":"let me in"}"#),
        c(.post, "/v1/rooms/r1/messages", "bob", 201, json: #"{"body":"yes"}"#),
        c(.post, "/v1/rooms/r1/read", "carol", 404, json: "{}"),
        c(.post, "/v1/rooms/r1/read", "bob", 200, json: "{}"),
        c(.delete, "/v1/rooms/r1/members/me", "carol", 404), c(.post, "/v1/rooms/r1/hide", "carol", 404),
        // Only the sender edits or deletes a message.
        c(.patch, "/v1/rooms/r1/messages/m1", "bob", 403, json: #"{"body":"mine now"}"#),
        c(.delete, "/v1/rooms/r1/messages/m1", "bob", 403),
        c(.patch, "/v1/rooms/r1/messages/m1", "carol", 404, json: #"{"body":"mine now"}"#),
        c(.patch, "/v1/rooms/r1/messages/m1", "alice", 200, json: #"{"body":"Walk at seven?"}"#),
        // An activity is seen by its host and guests; only the host changes it.
        c(.get, "/v1/activities/a1", "alice", 200), c(.get, "/v1/activities/a1", "bob", 200),
        c(.get, "/v1/activities/a1", "carol", 404),
        c(.patch, "/v1/activities/a1", "bob", 403, json: #"{"title":"Mine"}"#),
        c(.post, "/v1/activities/a1/cancel", "bob", 403),
        c(.post, "/v1/activities/a1/guests", "bob", 403, json: #"{"guests":["carol"]}"#),
        c(.delete, "/v1/activities/a1/guests/bob", "carol", 404),
        c(.put, "/v1/activities/a1/rsvp", "carol", 404, json: #"{"answer":"going"}"#),
        c(.put, "/v1/activities/a1/rsvp", "bob", 200, json: #"{"answer":"going"}"#),
        c(.patch, "/v1/activities/a1", "alice", 200, json: #"{"title":"Longer walk"}"#),
        // Admin routes need the role.
        c(.get, "/v1/admin/audit", "alice", 403), c(.get, "/v1/admin/audit", "root", 200, admin: true),
        c(.get, "/v1/admin/stats", "bob", 403), c(.get, "/v1/admin/stats", "root", 200, admin: true),
        c(.get, "/v1/admin/export", "bob", 403), c(.get, "/v1/admin/export", "root", 200, admin: true),
        c(.get, "/v1/admin/verify", "carol", 403), c(.get, "/v1/admin/verify", "root", 200, admin: true),
        c(.post, "/v1/admin/feelings", "alice", 403, json: #"{"feeling":"f1","name":"Joy","emoji":"😊"}"#),
        c(.post, "/v1/admin/feelings", "root", 201, admin: true, json: #"{"feeling":"f1","name":"Joy","emoji":"😊"}"#),
        // The actor is always the token's subject: an admin acts as the user its token names (here one
        // who never signed up), and a body cannot name another user.
        c(.post, "/v1/rooms/r1/messages", "root", 404, admin: true, json: #"{"body":"as admin"}"#),
        c(.post, "/v1/users", "bob", 409, json: #"{"method":"email","email":"x@example.com"}"#),
        // Public routes need no token; everything else does.
        c(.get, "/healthz", nil, 200), c(.get, "/readyz", nil, 200), c(.get, "/v1/openapi.json", nil, 200),
        c(.get, "/metrics", nil, 200), c(.get, "/v1/me/rooms", nil, 401), c(.get, "/v1/me", nil, 401),
        c(.get, "/v1/live", nil, 426), c(.get, "/v1/live", "alice", 426),
        c(.post, "/v1/rooms/r1/hide", "bob", 200),
        c(.post, "/v1/rooms/r1/messages", nil, 401, json: #"{"body":"anonymous"}"#),
        c(.get, "/v1/admin/audit", nil, 401),
    ]

    @Test(arguments: cases)
    func matrix(_ rule: Case) async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let answer = try await client.call(
                rule.method, rule.path, as: rule.caller, admin: rule.admin, json: rule.json)
            #expect(answer.status == rule.status, "\(rule): \(answer.body)")
            if answer.status >= 400 {
                #expect(answer.body.hasPrefix(#"{"error":{"code":"#), "\(rule): \(answer.body)")
            }
        }
    }

    /// Bad tokens are all the same 401 that says nothing about why.
    @Test func badTokens() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        let expired = try await token("alice", ttl: -60)
        let otherKey = try await token("alice", secret: "another-secret-another-secret-another-secret")
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let payload = base64URL(#"{"sub":"alice","exp":\#(Int(Date().timeIntervalSince1970) + 3600)}"#)
        let unsigned = base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + payload + "."
        let valid = try await token("alice")
        let parts = valid.split(separator: ".")
        let tampered = parts[0] + "." + payload + "." + parts[2]
        let noSubject = try await token("")
        let headers: [String] = [
            "Bearer " + expired, "Bearer " + otherKey, "Bearer " + unsigned, "Bearer " + tampered,
            "Bearer " + noSubject, "Bearer not.a.jwt", "Bearer ", "Basic YWxpY2U6c2VjcmV0",
        ]
        try await harness.test { client in
            for header in headers {
                let answer = try await client.call(.get, "/v1/me/rooms", headers: [.authorization: header], body: nil)
                #expect(answer.status == 401, "\(header.prefix(20))…: \(answer.body)")
                #expect(
                    answer.body
                        == #"{"error":{"code":"unauthorized","message":"a valid bearer token is required (Authorization: Bearer <JWT>)"}}"#
                )
            }
            let good = try await client.call(
                .get, "/v1/me/rooms", headers: [.authorization: "Bearer " + valid], body: nil)
            #expect(good.status == 200)
        }
    }

    /// Another user's profile comes without phone and email; one's own and an admin's view keep them.
    @Test func profilesHideContactDetails() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let seen = try await client.call(.get, "/v1/users/bob", as: "carol")
            #expect(seen.status == 200)
            #expect(!seen.body.contains("+14155550100"), "\(seen.body)")
            let own = try await client.call(.get, "/v1/users/bob", as: "bob")
            #expect(own.body.contains("+14155550100"))
            let admin = try await client.call(.get, "/v1/users/bob", as: "root", admin: true)
            #expect(admin.body.contains("+14155550100"))
            // Signing up registers the token's subject, whatever the body says.
            let signUp = try await client.call(
                .post, "/v1/users", as: "erin", json: #"{"method":"email","email":"e@example.com","user":"dave"}"#)
            #expect(signUp.status == 201 && signUp.body.contains(#""user":"erin""#), "\(signUp.body)")
            #expect(try harness.engine.profile(UserID("dave")) == nil)
            // A body naming another user changes only the caller.
            let patched = try await client.call(
                .patch, "/v1/me/profile", as: "bob", json: #"{"user":"alice","name":"Bobby"}"#)
            #expect(patched.status == 200)
            #expect(try harness.engine.profile(UserID("alice"))?.name == "Alice")
            #expect(try harness.engine.profile(UserID("bob"))?.name == "Bobby")
        }
    }
}

/// Tokens from an outside identity provider, checked against its JWKS file, its issuer and our audience.
@Suite(.onTestThreads) struct JWKSTests {
    static let issuer = "https://securetoken.google.com/parley-app"
    static let audience = "parley-app"

    static func claims(
        _ user: String, issuer: String = issuer, audience: String = audience, expiresIn: Double = 60,
        admin: Bool = false
    ) -> AccessClaims {
        var claims = AccessClaims(user: user, expires: Date().addingTimeInterval(expiresIn), admin: admin)
        claims.iss = IssuerClaim(value: issuer)
        claims.aud = AudienceClaim(value: [audience])
        return claims
    }

    @Test(arguments: ["ES256", "RS256"])
    func providerTokensVerifyAgainstAJWKSFile(_ algorithm: String) async throws {
        let signer = JWTKeyCollection()
        let stranger = JWTKeyCollection()
        let jwk: String
        if algorithm == "ES256" {
            let key = ES256PrivateKey()
            let p = try #require(key.publicKey.parameters)
            jwk = #"{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":"\#(p.x)","y":"\#(p.y)"}"#
            await signer.add(ecdsa: key, kid: "k1")
            await stranger.add(ecdsa: ES256PrivateKey(), kid: "k1")
        } else {
            let key = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
            let p = try key.publicKey.getKeyPrimitives()
            func b64(_ data: Data) -> String {
                data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            jwk =
                #"{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","n":"\#(b64(p.modulus))","e":"\#(b64(p.publicExponent))"}"#
            await signer.add(rsa: key, digestAlgorithm: .sha256, kid: "k1")
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID()).json").path
        try #"{"keys":[\#(jwk)]}"#.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verifier = try await TokenVerifier.jwks(file: path, issuer: Self.issuer, audience: Self.audience)

        let good = try await signer.sign(Self.claims("alice"), kid: "k1")
        #expect(await verifier.identity(token: good) == Identity(user: UserID("alice"), isAdmin: false))
        // Another app of the same provider (its audience, or its issuer), an expired token, an HS256 token,
        // and a token signed by another key are all refused.
        let otherApp = try await signer.sign(Self.claims("alice", audience: "other-app"), kid: "k1")
        #expect(await verifier.identity(token: otherApp) == nil)
        let otherIssuer = try await signer.sign(
            Self.claims("alice", issuer: "https://securetoken.google.com/other-app"), kid: "k1")
        #expect(await verifier.identity(token: otherIssuer) == nil)
        let expired = try await signer.sign(Self.claims("alice", expiresIn: -60), kid: "k1")
        #expect(await verifier.identity(token: expired) == nil)
        #expect(await verifier.identity(token: try await token("alice")) == nil)
        if algorithm == "ES256" {
            let forged = try await stranger.sign(Self.claims("alice"), kid: "k1")
            #expect(await verifier.identity(token: forged) == nil)
        }
        // The provider's tokens do not grant the admin role unless the server is told to trust the claim.
        let claimsAdmin = try await signer.sign(Self.claims("mallory", admin: true), kid: "k1")
        #expect(await verifier.identity(token: claimsAdmin)?.isAdmin == false)
        let trusting = try await TokenVerifier.jwks(
            file: path, issuer: Self.issuer, audience: Self.audience, trustingRoleClaim: true)
        #expect(await trusting.identity(token: claimsAdmin)?.isAdmin == true)

        // A file that is no JWKS is a clear error naming it.
        try "not json".write(toFile: path, atomically: true, encoding: .utf8)
        await #expect(throws: KeyFileError.self) {
            try await TokenVerifier.jwks(file: path, issuer: Self.issuer, audience: Self.audience)
        }
    }

    @Test func shortSecretsAreRefused() async throws {
        await #expect(throws: KeyFileError.self) { try await TokenVerifier.hmac(secret: "short") }
    }
}
