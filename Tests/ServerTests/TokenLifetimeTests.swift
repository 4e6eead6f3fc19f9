import Foundation
import HTTPTypes
import JWTKit
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// Which key a provider's token names, what a live upgrade with a bad token is told, and what happens to a live
/// connection when its token expires.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct TokenLifetimeTests {
    /// An ES256 key as a JWKS entry named `kid`, and a collection that signs with it under that name.
    static func key(_ kid: String) async -> (jwk: String, signer: JWTKeyCollection) {
        let key = ES256PrivateKey()
        let p = key.publicKey.parameters!
        let signer = JWTKeyCollection()
        await signer.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return (
            #"{"kty":"EC","crv":"P-256","kid":"\#(kid)","alg":"ES256","use":"sig","x":"\#(p.x)","y":"\#(p.y)"}"#, signer
        )
    }

    static func writeJWKS(_ entries: [String], to path: String) throws {
        try #"{"keys":[\#(entries.joined(separator: ","))]}"#.write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID()).json").path
    }

    @Test func aTokenWhoseKeyIDNamesNoKeyOfTheJWKSIsRefused() async throws {
        let (jwk, signer) = await Self.key("k1")
        let path = Self.temporaryPath()
        try Self.writeJWKS([jwk], to: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verifier = try await TokenVerifier.jwks(file: path, issuer: JWKSTests.issuer, audience: JWKSTests.audience)

        let named = try await signer.sign(JWKSTests.claims("alice"), kid: "k1")
        #expect(await verifier.identity(token: named)?.user == UserID("alice"))
        // The file's only key signed both, but neither names it: a provider always says which key it used.
        let otherName = try await signer.sign(JWKSTests.claims("alice"), kid: "k2")
        #expect(await verifier.identity(token: otherName) == nil)
        let unnamed = try await signer.sign(JWKSTests.claims("alice"))
        #expect(await verifier.identity(token: unnamed) == nil)
    }

    @Test func aKeyAddedToTheJWKSFileIsFoundByReadingItAgain() async throws {
        let (old, _) = await Self.key("k1")
        let (new, signer) = await Self.key("k2")
        let path = Self.temporaryPath()
        try Self.writeJWKS([old], to: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let verifier = try await TokenVerifier.jwks(file: path, issuer: JWKSTests.issuer, audience: JWKSTests.audience)
        let rotated = try await signer.sign(JWKSTests.claims("alice"), kid: "k2")
        #expect(await verifier.identity(token: rotated) == nil, "k2 is not in the file yet")

        // The provider rotates its keys; the operator writes the new set to the same file.
        try Self.writeJWKS([old, new], to: path)
        #expect(await verifier.identity(token: rotated)?.user == UserID("alice"))
    }

    @Test func aLiveUpgradeWithABadTokenIs401() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let upgrade: HTTPFields = [
                .upgrade: "websocket", .connection: "Upgrade", .secWebSocketKey: "dGhlIHNhbXBsZSBub25jZQ==",
                .secWebSocketVersion: "13",
            ]
            for bad in [try await token("alice", ttl: -60), "not-a-token"] {
                var headers = upgrade
                headers[.authorization] = "Bearer \(bad)"
                let answer = try await client.call(.get, "/v1/live", headers: headers, body: nil)
                #expect(answer.status == 401, "\(answer.body)")
                #expect(answer.body.hasPrefix(#"{"error":{"code":"unauthorized","#), "\(answer.body)")
                #expect(answer.headers[.wwwAuthenticate] == "Bearer")
            }
            // A good token still upgrades.
            let live = try await client.live(as: "alice")
            try await live.subscribe("rooms")
            #expect(try await live.catchUp().last?.type == "caughtUp")
        }
    }

    @Test func aLiveConnectionIsClosedWith4001WhenItsTokenExpires() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        try await harness.test { client in
            // A token that expires in 2 s, or, on a machine too busy to upgrade within that, a longer one.
            var connected: WebSocketWire?
            for ttl in [2.0, 6, 20, 60] where connected == nil {
                connected = try? await WebSocketWire(port: client.port, token: try await token("alice", ttl: ttl))
            }
            let live = try #require(connected)
            try await live.subscribe("rooms")
            // Frames come as usual until the token expires — all of the catch-up, or on a busy machine only part
            // of it — and then the close, which names the last position sent.
            let (frames, code, reason) = try await live.framesUntilClose()
            #expect(code == 4001, "\(reason)")
            #expect(reason.hasPrefix("token expired"), "\(reason)")
            if let last = frames.compactMap(\.position).last {
                if frames.contains(where: { $0.type == "caughtUp" }) { #expect(last == 9) }
                #expect(reason.hasSuffix("since \(last)"), "\(reason)")
            } else {
                #expect(!reason.contains("since"), "\(reason)")
            }
        }
    }
}
