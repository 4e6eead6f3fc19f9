import Delivery
import EventLog
import Foundation
import JWTKit
import ParleyTestSupport
import Projections
import Testing
import _CryptoExtras

/// An FCM-shaped HTTP server for tests: a token endpoint (`/token`) that hands out access tokens for a service
/// account's JWT, and the send endpoint of project `parley-test`, which refuses a token it did not issue (or one
/// the test revoked) with 401 and otherwise answers as the test says.
final class FCMServer: Sendable {
    static let project = "parley-test"
    static let clientEmail = "push@parley-test.iam.gserviceaccount.com"
    static let keyID = "key-1"

    private struct State {
        var issued: [String] = []
        var revoked: Set<String> = []
        var answer: @Sendable (ProviderServer.Request) -> ProviderServer.Response = { _ in
            .json(200, #"{"name":"projects/parley-test/messages/1"}"#)
        }
    }

    let http: ProviderServer
    private let state = PlainMutex(State())

    private init(http: ProviderServer) { self.http = http }

    /// A server on a free port.
    static func start() async throws -> FCMServer {
        let box = PlainMutex<FCMServer?>(nil)
        let http = try await ProviderServer.startHTTP1 { request in
            box.withLock { $0 }?.answer(request) ?? .init(status: 503)
        }
        let server = FCMServer(http: http)
        box.withLock { $0 = server }
        return server
    }

    /// The token endpoint's URL.
    var tokenURL: String { "\(http.url)/token" }

    /// The access tokens issued so far, in order.
    var issued: [String] { state.withLock { $0.issued } }

    /// The token requests so far.
    var tokenRequests: [ProviderServer.Request] { http.requests.filter { $0.path == "/token" } }

    /// The send requests so far.
    var sends: [ProviderServer.Request] { http.requests.filter { $0.path != "/token" } }

    /// Refuses `token` with 401 from now on.
    func revoke(_ token: String) { _ = state.withLock { $0.revoked.insert(token) } }

    /// Answers every later send made with a valid token as `answer` says.
    func answer(_ answer: @escaping @Sendable (ProviderServer.Request) -> ProviderServer.Response) {
        state.withLock { $0.answer = answer }
    }

    private func answer(_ request: ProviderServer.Request) -> ProviderServer.Response {
        if request.path == "/token" {
            let token = state.withLock { state in
                state.issued.append("ya29.token-\(state.issued.count + 1)")
                return state.issued[state.issued.count - 1]
            }
            return .json(200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#)
        }
        guard request.path == "/v1/projects/\(Self.project)/messages:send" else { return .init(status: 404) }
        let bearer = request.headers["authorization"].map { String($0.dropFirst("Bearer ".count)) } ?? ""
        let (valid, answer) = state.withLock { ($0.issued.contains(bearer) && !$0.revoked.contains(bearer), $0.answer) }
        guard valid else {
            return .json(
                401,
                #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","#
                    + #""status":"UNAUTHENTICATED"}}"#)
        }
        return answer(request)
    }

    /// A service account's JSON for `key`, its token URL this server's.
    func serviceAccount(key: _RSA.Signing.PrivateKey) throws -> [UInt8] {
        let account: [String: String] = [
            "type": "service_account", "project_id": Self.project, "private_key_id": Self.keyID,
            "private_key": key.pkcs8PEMRepresentation, "client_email": Self.clientEmail, "token_uri": tokenURL,
        ]
        return Array(try JSONSerialization.data(withJSONObject: account))
    }

    /// FCM at this server, for `key`'s service account.
    func configuration(key: _RSA.Signing.PrivateKey) throws -> FCMConfiguration {
        var fcm = try FCMConfiguration(serviceAccount: serviceAccount(key: key), source: "test.json", url: http.url)
        fcm.connectTimeout = .seconds(5)
        return fcm
    }

    func stop() async throws { try await http.stop() }
}

/// The push subscription sending to an FCM-shaped server the test runs on 127.0.0.1: the OAuth 2 service-account
/// flow, the message each notification makes, and what FCM's answers make it do.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct FCMDeliveryTests {
    /// The claims of a service account's JWT.
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// A 2048-bit RSA key, as a service account has.
    static func key() throws -> _RSA.Signing.PrivateKey { try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    /// The form fields of a token request.
    static func form(_ request: ProviderServer.Request) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    /// Runs the push subscription over `engine` (positions in `directory`) until `send` returns, sending to an
    /// ``FCMServer`` that answers valid sends as `answer` says (its default when nil) and refuses the `revoked`
    /// tokens, for a new service account key; the server stops once this returns, keeping what it received.
    static func deliver(
        _ engine: Engine, directory: String, answer: ProviderServer.Responder? = nil, revoked: [String] = [],
        _ send: (PushSink) async throws -> Void
    ) async throws -> (server: FCMServer, key: _RSA.Signing.PrivateKey, sink: PushSink) {
        let server = try await FCMServer.start()
        defer { Task { try? await server.stop() } }
        if let answer { server.answer(answer) }
        for token in revoked { server.revoke(token) }
        let key = try Self.key()
        let sink = try await PushFixtures.withPush(
            engine, directory: directory, configuration: PushConfiguration(fcm: try server.configuration(key: key))
        ) { sink in
            try await send(sink)
            return sink
        }
        return (server, key, sink)
    }

    @Test func everyNotificationIsSentWithAnAccessTokenTheServiceAccountSigned() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            var before: Int64 = 0
            let (server, key, sink) = try await Self.deliver(engine, directory: directory) { sink in
                before = Int64(Date().timeIntervalSince1970)
                try await engine.sendMessage(in: "g1", from: "ann", body: "walk at six?")
                // Worked out when delivered: the setting changes once the first is sent.
                try await PushFixtures.eventually { sink.counts.sent == 1 }
                try await engine.setHidesPreviews(true, user: "ben")
                try await engine.sendMessage(in: "d1", from: "ann", body: "or seven")
                try await PushFixtures.eventually { sink.counts.sent == 2 && sink.counts.skipped == 3 }
            }
            // One access token, asked for with a JWT the service account's key signed.
            let tokenRequests = server.tokenRequests
            #expect(tokenRequests.count == 1)
            let request = try #require(tokenRequests.first)
            #expect(request.method == "POST")
            #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
            let form = Self.form(request)
            #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
            let assertion = try #require(form["assertion"])
            let header =
                try JSONSerialization.jsonObject(
                    with: try #require(Data(base64URL: String(assertion.prefix { $0 != "." })))) as? [String: Any]
            #expect(header?["alg"] as? String == "RS256")
            #expect(header?["kid"] as? String == FCMServer.keyID)
            let keys = await JWTKeyCollection().add(
                rsa: try Insecure.RSA.PublicKey(pem: key.publicKey.pemRepresentation), digestAlgorithm: .sha256,
                kid: JWKIdentifier(string: FCMServer.keyID))
            let claims = try await keys.verify(assertion, as: Claims.self)
            #expect(claims.iss.value == FCMServer.clientEmail)
            #expect(claims.scope == "https://www.googleapis.com/auth/firebase.messaging")
            #expect(claims.aud.value == [server.tokenURL])
            #expect(Int64(claims.iat.value.timeIntervalSince1970) >= before - 1)
            #expect(claims.exp.value.timeIntervalSince(claims.iat.value) == 3600)
            // Each notification, with that token.
            let sends = server.sends
            #expect(sends.count == 2)
            #expect(sends.allSatisfy { $0.method == "POST" && $0.headers["authorization"] == "Bearer ya29.token-1" })
            #expect(sends.allSatisfy { $0.headers["content-type"] == "application/json" })
            let messages = sends.map { $0.json["message"] as? [String: Any] ?? [:] }
            let data = messages.map { $0["data"] as? [String: String] ?? [:] }
            let events = data.map { $0["event"] ?? "" }
            let positions = data.map { $0["position"] ?? "" }
            #expect(
                String(decoding: sends[0].body, as: UTF8.self) == """
                    {"message":{"android":{"notification":{"notification_count":1},"priority":"HIGH"},\
                    "apns":{"payload":{"aps":{"badge":1,"sound":"default"}}},\
                    "data":{"badge":"1","event":"\(events[0])","id":"\(events[0])/ben/tablet","kind":"message",\
                    "position":"\(positions[0])","room":"g1"},\
                    "notification":{"body":"walk at six?","title":"Ann"},"token":"ben-tablet"}}
                    """)
            // The second hides its preview: no notification body.
            #expect(messages[1]["notification"] as? [String: String] == ["title": "Ann"])
            #expect(data[1]["badge"] == "2" && data[1]["room"] == "d1")
            #expect(UInt64(positions[1]) ?? 0 > UInt64(positions[0]) ?? 0)
            let provider = try #require(sink.provider(for: .fcm) as? FCMProvider)
            #expect(await provider.tokensMade == 1)
        }
    }

    @Test func anUnregisteredOrInvalidTokenRemovesTheDevice() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            try await engine.registerDevice("laptop", of: "ben", platform: .fcm, appID: "app", token: "ben-laptop")
            try await engine.registerDevice("reader", of: "ben", platform: .fcm, appID: "app", token: "ben-reader")
            let (server, _, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: { request in
                    let body = String(decoding: request.body, as: UTF8.self)
                    if body.contains(#""token":"ben-tablet""#) {
                        return .json(
                            404,
                            #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","#
                                + #""details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","#
                                + #""errorCode":"UNREGISTERED"}]}}"#)
                    }
                    if body.contains(#""token":"ben-laptop""#) {
                        return .json(
                            400,
                            #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration "#
                                + #"token","status":"INVALID_ARGUMENT","details":[{"@type":"#
                                + #""type.googleapis.com/google.firebase.fcm.v1.FcmError","#
                                + #""errorCode":"INVALID_ARGUMENT"},"#
                                + #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"#
                                + #""field":"message.token","description":"Invalid registration token"}]}]}}"#)
                    }
                    return .json(200, #"{"name":"projects/parley-test/messages/2"}"#)
                }
            ) { sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                try await PushFixtures.eventually { try engine.devices(of: "ben") == ["phone", "reader"] }
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                try await PushFixtures.eventually { sink.counts.sent == 2 }
            }
            #expect(try engine.devices(of: "ben") == ["phone", "reader"])
            let tokens = server.sends.map {
                ($0.json["message"] as? [String: Any])?["token"] as? String ?? ""
            }
            #expect(tokens.sorted() == ["ben-laptop", "ben-reader", "ben-reader", "ben-tablet"])
            #expect(sink.counts.devicesRemoved == 2)
        }
    }

    @Test func aRefusedAccessTokenIsFetchedAgainAndTheNotificationSent() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let (server, _, sink) = try await Self.deliver(engine, directory: directory, revoked: ["ya29.token-1"]) {
                sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "one")
                try await engine.sendMessage(in: "d1", from: "ann", body: "two")
                try await PushFixtures.eventually { sink.counts.sent == 2 }
            }
            // Refused once, fetched again at once, and the new one kept.
            #expect(server.issued == ["ya29.token-1", "ya29.token-2"])
            #expect(
                server.sends.map { $0.headers["authorization"] ?? "" } == [
                    "Bearer ya29.token-1", "Bearer ya29.token-2", "Bearer ya29.token-2",
                ])
            #expect(server.sends[0].body == server.sends[1].body)
            let provider = try #require(sink.provider(for: .fcm) as? FCMProvider)
            #expect(await provider.tokensMade == 2)
        }
    }

    @Test func anUnavailableServiceIsTriedAgainNoSoonerThanItsRetryAfter() async throws {
        try await withEngine { engine, directory in
            try await PushFixtures.world(engine)
            let (server, _, sink) = try await Self.deliver(
                engine, directory: directory,
                answer: PushFixtures.answering(
                    first: .json(
                        503, #"{"error":{"code":503,"message":"The service is unavailable.","status":"UNAVAILABLE"}}"#,
                        headers: [("retry-after", "1")]),
                    later: .json(200, #"{"name":"projects/parley-test/messages/3"}"#))
            ) { sink in
                try await engine.sendMessage(in: "d1", from: "ann", body: "later")
                try await PushFixtures.eventually { sink.counts.sent == 1 }
            }
            let sends = server.sends
            #expect(sends.count == 2)
            #expect(sends[0].body == sends[1].body)
            #expect(sends[1].arrival - sends[0].arrival >= .seconds(1))
            #expect(sink.counts.sent == 1)
        }
    }

    @Test func aServiceAccountFileThatLacksAFieldOrSendsItsTokenInTheClearIsRefused() throws {
        let key = try Self.key()
        let missing = Array(#"{"type":"service_account","project_id":"p","client_email":"a@b.c"}"#.utf8)
        PushFixtures.expectRefused("a service account without a private key was taken") { () throws(DeliveryError) in
            _ = try FCMConfiguration(serviceAccount: missing, source: "account.json")
        } check: { error in
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.hasPrefix("the FCM service account account.json has no 'private_key'"))
        }
        let account: [String: String] = [
            "project_id": "p", "client_email": "a@b.c", "private_key": key.pkcs8PEMRepresentation,
            "token_uri": "http://oauth2.example.com/token",
        ]
        let json = Array(try JSONSerialization.data(withJSONObject: account))
        PushFixtures.expectRefused("a token URL in plain http to another host was taken") { () throws(DeliveryError) in
            _ = try FCMConfiguration(serviceAccount: json, source: "account.json")
        } check: { error in
            #expect(error.code == .invalidConfiguration)
            #expect(error.message.contains("account.json's token_uri URL 'http://oauth2.example.com/token'"))
        }
        PushFixtures.expectRefused("a JSON array was taken") { () throws(DeliveryError) in
            _ = try FCMConfiguration(serviceAccount: Array("[]".utf8), source: "account.json")
        } check: { error in
            #expect(error.message.hasPrefix("the FCM service account account.json is not a JSON object"))
        }
    }
}
