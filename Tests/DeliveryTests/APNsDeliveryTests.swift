import Crypto
import Delivery
import EventLog
import Foundation
import JWTKit
import ParleyTestSupport
import Projections
import Testing

/// The push subscription sending to an APNs-shaped HTTP/2 TLS server the test runs on 127.0.0.1: the signed
/// provider token, the headers and body of each notification, and what APNs' answers make it do.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct APNsDeliveryTests {
    static let keyID = "KEY123ABCD"
    static let teamID = "TEAM45678X"

    /// The claims of an APNs provider token.
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A server for `certificates` answering 200 (with an `apns-id`) until told otherwise.
    static func server(_ certificates: TestCertificates) async throws -> ProviderServer {
        try await ProviderServer.startHTTP2(certificates: certificates) { request in
            .init(status: 200, headers: [("apns-id", request.headers["apns-id"] ?? "")])
        }
    }

    /// APNs at `server`, signing with `key`, trusting `certificates`' authority.
    static func configuration(
        _ server: ProviderServer, key: P256.Signing.PrivateKey, certificates: TestCertificates
    ) throws -> PushConfiguration {
        var apns = try APNsConfiguration(
            keyPEM: key.pemRepresentation, keyID: keyID, teamID: teamID, url: server.url)
        apns.trustedCertificates = Array(certificates.caPEM.utf8)
        apns.connectTimeout = .seconds(5)
        return PushConfiguration(apns: apns)
    }

    /// The claims of the bearer token `request` carries, once its ES256 signature checks out under `key` and its
    /// header names the key.
    static func claims(of request: ProviderServer.Request, key: P256.Signing.PrivateKey) async throws -> Claims {
        let authorization = try #require(request.headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        let token = String(authorization.dropFirst("bearer ".count))
        let header =
            try JSONSerialization.jsonObject(
                with: try #require(Data(base64URL: String(token.prefix { $0 != "." })))) as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["kid"] as? String == keyID)
        let keys = await JWTKeyCollection().add(
            ecdsa: try ES256PublicKey(pem: key.publicKey.pemRepresentation), kid: JWKIdentifier(string: keyID))
        return try await keys.verify(token, as: Claims.self)
    }

    /// Runs the push subscription over `engine` (positions in `directory`) until `send` returns, sending to an APNs
    /// server on 127.0.0.1 that answers as `answer` says (as ``server(_:)`` does when nil), signing with a new key,
    /// `configure` applied to the configuration; the server stops once this returns, keeping what it received.
    static func deliver(
        _ engine: Engine, directory: String, answer: ProviderServer.Responder? = nil,
        configure: (inout PushConfiguration) -> Void = { _ in },
        _ send: (ProviderServer, PushSink) async throws -> Void
    ) async throws -> (server: ProviderServer, key: P256.Signing.PrivateKey, sink: PushSink) {
        let certificates = try TestCertificates.make()
        let server = try await Self.server(certificates)
        defer { Task { try? await server.stop() } }
        if let answer { server.respond(answer) }
        let key = P256.Signing.PrivateKey()
        var configuration = try Self.configuration(server, key: key, certificates: certificates)
        configure(&configuration)
        let sink = try await PushFixtures.withPush(engine, directory: directory, configuration: configuration) {
            sink in
            try await send(server, sink)
            return sink
        }
        return (server, key, sink)
    }

    @Test func everyNotificationArrivesOverHTTP2WithASignedTokenTheHeadersAndTheBadge() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            var before: Int64 = 0
            let (server, key, sink) = try await Self.deliver(engine, directory: directory) { server, sink in
                before = Int64(Date().timeIntervalSince1970)
                try await engine.sendMessage(in: "g1", from: "ann", body: "walk at six?")
                await server.wait { $0.count >= 1 }
                try await engine.setHidesPreviews(true, user: "ben")
                try await engine.sendMessage(in: "d1", from: "ann", body: "or seven")
                await server.wait { $0.count >= 2 }
                try await PushFixtures.eventually { sink.counts.sent == 2 && sink.counts.skipped == 3 }
            }
            let requests = server.requests
            #expect(requests.count == 2)
            #expect(requests.map(\.path) == ["/3/device/ben-phone", "/3/device/ben-phone"])
            #expect(requests.allSatisfy { $0.method == "POST" && $0.version == "HTTP/2.0" })
            for request in requests {
                let claims = try await Self.claims(of: request, key: key)
                #expect(claims.iss.value == Self.teamID)
                #expect(Int64(claims.iat.value.timeIntervalSince1970) >= before - 1)
                #expect(request.headers["apns-topic"] == "app")
                #expect(request.headers["apns-push-type"] == "alert")
                #expect(request.headers["apns-priority"] == "10")
                #expect(Int64(request.headers["apns-expiration"] ?? "") ?? 0 >= before + 24 * 3600)
                let event = try #require(request.json["event"] as? String)
                #expect(request.headers["apns-collapse-id"] == event)
                #expect(request.headers["apns-id"] == APNsProvider.apnsID(of: "\(event)/ben/phone"))
            }
            // One token, made once and used for both.
            #expect(Set(requests.map { $0.headers["authorization"] }).count == 1)
            let provider = try #require(sink.provider(for: .apns) as? APNsProvider)
            #expect(await provider.tokensMade == 1)
            // The second hides the preview: no alert body.
            let bodies = requests.map { String(decoding: $0.body, as: UTF8.self) }
            let positions = requests.map { $0.json["position"] as? Int ?? 0 }
            #expect(
                bodies[0] == """
                    {"aps":{"alert":{"body":"walk at six?","title":"Ann"},"badge":1,"sound":"default"},\
                    "event":"\(requests[0].json["event"] as? String ?? "")","kind":"message",\
                    "position":\(positions[0]),"room":"g1"}
                    """)
            #expect(
                bodies[1] == """
                    {"aps":{"alert":{"title":"Ann"},"badge":2,"sound":"default"},\
                    "event":"\(requests[1].json["event"] as? String ?? "")","kind":"message",\
                    "position":\(positions[1]),"room":"d1"}
                    """)
            #expect(positions[0] > 0 && positions[1] > positions[0])
            // ben's fcm tablet and cal's webpush phone have no provider here: skipped.
            #expect(sink.counts == PushSink.Counts(sent: 2, devicesRemoved: 0, dropped: 0, skipped: 3))
        }
    }

    @Test func anUnregisteredDeviceIsRemovedAndGetsNothingMore() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            try await engine.registerDevice("watch", of: "ben", platform: .apns, appID: "app", token: "ben-watch")
            let (server, _, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: { request in
                    request.path.hasSuffix("/ben-phone")
                        ? .json(410, #"{"reason":"Unregistered","timestamp":1795165200000}"#) : .init(status: 200)
                }
            ) { server, sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                try await PushFixtures.eventually { try engine.devices(of: "ben") == ["tablet", "watch"] }
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                await server.wait { requests in requests.filter { $0.path.hasSuffix("/ben-watch") }.count >= 2 }
                try await PushFixtures.eventually { sink.counts.sent == 2 }
            }
            #expect(try engine.devices(of: "ben") == ["tablet", "watch"])
            let paths = server.requests.map(\.path)
            #expect(paths.filter { $0.hasSuffix("/ben-phone") }.count == 1)
            #expect(paths.filter { $0.hasSuffix("/ben-watch") }.count == 2)
            #expect(sink.counts.devicesRemoved == 1 && sink.counts.sent == 2)
        }
    }

    @Test func aThrottledNotificationIsSentAgainNoSoonerThanItsRetryAfter() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let (server, _, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: PushFixtures.answering(
                    first: .json(429, #"{"reason":"TooManyRequests"}"#, headers: [("retry-after", "1")]),
                    later: .init(status: 200))
            ) { server, sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "slow down")
                await server.wait { $0.count >= 2 }
                try await PushFixtures.eventually { sink.counts.sent == 1 }
            }
            let requests = server.requests
            #expect(requests.count == 2)
            // The same notification twice, the second after the second the server asked for (the retry policy
            // alone would have tried again after 20 ms).
            #expect(requests[0].headers["apns-id"] == requests[1].headers["apns-id"])
            #expect(requests[0].body == requests[1].body)
            #expect(requests[1].arrival - requests[0].arrival >= .seconds(1))
            #expect(sink.counts.sent == 1)
        }
    }

    @Test func anExpiredProviderTokenIsRenewedAndTheNotificationSent() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let first = PlainMutex<String?>(nil)
            let (server, key, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: { request in
                    let authorization = request.headers["authorization"] ?? ""
                    let expired = first.withLock { first in
                        if first == nil { first = authorization }
                        return first == authorization
                    }
                    return expired ? .json(403, #"{"reason":"ExpiredProviderToken"}"#) : .init(status: 200)
                }
            ) { server, sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                await server.wait { $0.count >= 2 }
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                await server.wait { $0.count >= 3 }
                try await PushFixtures.eventually { sink.counts.sent == 2 }
            }
            let requests = server.requests
            #expect(requests.count == 3)
            let tokens = requests.map { $0.headers["authorization"] ?? "" }
            // Refused, renewed at once, and the new one kept for the next notification.
            #expect(tokens[0] != tokens[1] && tokens[1] == tokens[2])
            #expect(requests[0].body == requests[1].body)
            for request in requests { #expect(try await Self.claims(of: request, key: key).iss.value == Self.teamID) }
            let provider = try #require(sink.provider(for: .apns) as? APNsProvider)
            #expect(await provider.tokensMade == 2)
            #expect(sink.counts.sent == 2)
        }
    }

    @Test func aTokenIsRenewedOnceItsRenewalTimeHasPassed() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let (server, key, sink) = try await Self.deliver(
                engine, directory: directory,
                // Due for renewal at once (50 minutes in production): each notification gets a token of its own.
                configure: { $0.apns?.tokenRenewal = .nanoseconds(1) }
            ) { _, sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                try await PushFixtures.eventually { sink.counts.sent == 1 }
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                try await PushFixtures.eventually { sink.counts.sent == 2 }
            }
            let requests = server.requests
            #expect(requests.count == 2)
            #expect(Set(requests.map { $0.headers["authorization"] }).count == 2)
            for request in requests { #expect(try await Self.claims(of: request, key: key).iss.value == Self.teamID) }
            let provider = try #require(sink.provider(for: .apns) as? APNsProvider)
            #expect(await provider.tokensMade == 2)
        }
    }

    @Test func aNotificationAPNsRefusesForGoodIsDroppedAndTheNextStillGoes() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let (server, _, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: { request in
                    String(decoding: request.body, as: UTF8.self).contains("too big")
                        ? .json(413, #"{"reason":"PayloadTooLarge"}"#) : .init(status: 200)
                }
            ) { server, sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "too big")
                try await engine.sendMessage(in: "d1", from: "ann", body: "fine")
                await server.wait { $0.count >= 2 }
                try await PushFixtures.eventually { sink.counts.sent == 1 && sink.counts.skipped == 2 }
            }
            #expect(server.requests.count == 2)
            #expect(sink.counts == PushSink.Counts(sent: 1, devicesRemoved: 0, dropped: 1, skipped: 2))
            #expect(try engine.devices(of: "ben") == ["phone", "tablet"])
        }
    }

    @Test func aKeyThatIsNotAP256KeyOrABadTeamIDIsRefused() throws {
        let key = P256.Signing.PrivateKey().pemRepresentation
        #expect(throws: DeliveryError.self) {
            _ = try APNsConfiguration(keyPEM: "not a key", keyID: Self.keyID, teamID: Self.teamID)
        }
        PushFixtures.expectRefused("a team id of 5 characters was taken") { () throws(DeliveryError) in
            _ = try APNsConfiguration(keyPEM: key, keyID: Self.keyID, teamID: "short")
        } check: { error in
            #expect(error.code == .invalidConfiguration)
            #expect(error.message == "the APNs team id 'short' is not 10 letters or digits")
        }
        PushFixtures.expectRefused("a plain http URL to another host was taken") { () throws(DeliveryError) in
            _ = try APNsConfiguration(keyPEM: key, keyID: Self.keyID, teamID: Self.teamID, url: "http://example.com")
        } check: { error in
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("is not an https:// URL"))
        }
    }
}

extension Data {
    /// The bytes of base64url `text` (no padding), or nil.
    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
    }
}
