import AsyncHTTPClient
import Crypto
import EventLog
import Foundation
import JWTKit
import NIOCore
import Projections

/// How Parley reaches Apple Push Notification service: the token-authentication key, and where.
public struct APNsConfiguration: Sendable {
    /// The signing key (the `.p8` file's PEM text: a P-256 private key).
    let key: ES256PrivateKey
    /// The key's id (10 characters, from the developer account).
    public var keyID: String
    /// The developer team's id (10 characters).
    public var teamID: String
    /// The `apns-topic` of every notification; nil for each device's app id (its bundle id).
    public var topic: String?
    /// The service's base URL: `https://api.push.apple.com`, or `https://api.sandbox.push.apple.com` for
    /// development builds of an app.
    public var url: String
    /// How long APNs keeps trying to reach a device that is offline (`apns-expiration`).
    public var expiration: Duration = .seconds(24 * 3600)
    /// How long a signed token is used before a new one is made (APNs refuses one older than an hour, and one
    /// renewed more often than every 20 minutes).
    public var tokenRenewal: Duration = .seconds(50 * 60)
    /// How long one request may take before it counts as failed.
    public var timeout: Duration = .seconds(30)
    /// How long connecting may take before the request counts as failed.
    public var connectTimeout: Duration = .seconds(10)
    /// PEM certificates to trust besides the system's roots (a local test server's, a TLS proxy's); nil for none.
    public var trustedCertificates: [UInt8]?

    /// The default base URL.
    public static let defaultURL = "https://api.push.apple.com"

    /// A configuration signing with the PEM key `keyPEM` (`keyID`, of team `teamID`), posting to `url`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a key that is not a PEM P-256 private key, a key or
    ///   team id that is not 10 letters or digits, or a URL that is not https (http only to a loopback address).
    public init(keyPEM: String, keyID: String, teamID: String, topic: String? = nil, url: String = defaultURL)
        throws(DeliveryError)
    {
        do {
            key = try ES256PrivateKey(pem: keyPEM)
        } catch {
            throw DeliveryError(
                .invalidConfiguration,
                "the APNs key is not a PEM P-256 private key (the .p8 file from the developer account): \(error)")
        }
        for (name, value) in [("key id", keyID), ("team id", teamID)] {
            guard value.count == 10, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
            else {
                throw DeliveryError(.invalidConfiguration, "the APNs \(name) '\(value)' is not 10 letters or digits")
            }
        }
        if let topic, topic.isEmpty || topic.contains(where: { $0.isWhitespace }) {
            throw DeliveryError(.invalidConfiguration, "the APNs topic '\(topic)' is not a bundle id")
        }
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.url = try PushHTTPClient.baseURL(url, what: "APNs")
    }
}

/// Sends notifications to Apple devices through APNs over HTTP/2, authenticated by a token (an ES256 JWT) signed
/// with the team's key.
///
/// Each notification is a `POST <url>/3/device/<token>` with:
/// - `authorization: bearer <JWT>`: header `alg` ES256 and `kid` the key id, claims `iss` the team id and `iat`;
///   the token is made once and used for ``APNsConfiguration/tokenRenewal`` (50 minutes), then renewed;
/// - `apns-topic` (the configured topic, or the device's app id), `apns-push-type: alert`, `apns-priority: 10`,
///   `apns-expiration` (now plus ``APNsConfiguration/expiration``, in Unix seconds);
/// - `apns-id`: a UUID derived from the notification's id (the same on every attempt), and `apns-collapse-id`: the
///   event's id (so a notification sent twice shows once);
/// - the body: `{"aps":{"alert":{"title":…,"body":…},"badge":N,"sound":"default"},"event":…,"kind":…,"position":N,
///   "room":…,"activity":…}` (a body, room or activity that is nil left out).
///
/// Answers: 200 is delivered. 400 `BadDeviceToken` or `DeviceTokenNotForTopic` and 410 mean the device is gone
/// (``PushOutcome/deviceGone(reason:)``). 403 `ExpiredProviderToken` renews the token and sends once more. 429 and
/// every 5xx are tried again later (``PushOutcome/retry(after:reason:)``, honouring `Retry-After`). Any other 403,
/// and 404 or 405, say the key, team or URL is wrong — true of every notification — so the delivery fails (and is
/// retried, then parked where an admin sees it). Any other 4xx is about this one notification (a payload or topic
/// APNs refuses): it is logged and counted as done (``PushOutcome/dropped(reason:)``) rather than block the
/// subscription forever — that notification is lost.
public final class APNsProvider: PushProvider {
    public let configuration: APNsConfiguration
    public var name: String { "APNs" }
    private let client: PushHTTPClient
    private let credential: ProviderCredential

    /// A provider for `configuration`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for trusted certificates that cannot be read or a
    ///   timeout that is not above 0.
    public init(_ configuration: APNsConfiguration) throws(DeliveryError) {
        guard configuration.tokenRenewal > .zero, configuration.expiration >= .zero else {
            throw DeliveryError(.invalidConfiguration, "APNs token renewal must be above 0 and expiration at least 0")
        }
        client = try PushHTTPClient(
            what: "APNs", timeout: configuration.timeout, connectTimeout: configuration.connectTimeout,
            trustedCertificates: configuration.trustedCertificates)
        credential = ProviderCredential { () throws(DeliveryError) in
            try await ProviderCredential.Minted(
                value: Self.token(configuration, issuedAt: Date()), lifetime: configuration.tokenRenewal)
        }
        self.configuration = configuration
    }

    /// Tokens signed so far.
    public var tokensMade: Int { get async { await credential.minted } }

    /// The JWT APNs authenticates `configuration`'s team by, issued at `issuedAt`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` when it cannot be signed.
    static func token(_ configuration: APNsConfiguration, issuedAt: Date) async throws(DeliveryError) -> String {
        struct Claims: JWTPayload {
            var iss: IssuerClaim
            var iat: IssuedAtClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        do {
            let kid = JWKIdentifier(string: configuration.keyID)
            let keys = await JWTKeyCollection().add(ecdsa: configuration.key, kid: kid)
            let claims = Claims(
                iss: IssuerClaim(value: configuration.teamID),
                iat: IssuedAtClaim(value: Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))))
            return try await keys.sign(claims, kid: kid)
        } catch {
            throw DeliveryError(.invalidConfiguration, "cannot sign an APNs token: \(error)", cause: error)
        }
    }

    /// The body APNs gets for `notification`: JSON, keys sorted.
    public static func body(of notification: PushNotification) throws(DeliveryError) -> [UInt8] {
        struct Alert: Encodable {
            var title: String
            var body: String?
        }
        struct APS: Encodable {
            var alert: Alert
            var badge: Int
            var sound = "default"
        }
        struct Payload: Encodable {
            var aps: APS
            var event: String
            var kind: PushNotification.Kind
            var position: UInt64
            var room: RoomID?
            var activity: ActivityID?
        }
        let payload = Payload(
            aps: APS(alert: Alert(title: notification.title, body: notification.body), badge: notification.badge),
            event: notification.event, kind: notification.kind, position: notification.position,
            room: notification.room, activity: notification.activity)
        do {
            return Array(try JSONText.encodeBytes(payload, pretty: false))
        } catch {
            throw DeliveryError(.invalidConfiguration, "cannot encode notification \(notification.id): \(error)")
        }
    }

    /// The `apns-id` of a notification with id `id`: a UUID made of the first 16 bytes of its SHA-256 (version and
    /// variant bits set as for a name-based UUID), the same on every attempt.
    public static func apnsID(of id: String) -> String {
        var bytes = Array(SHA256.hash(data: Array(id.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.hexString.uppercased()
        var text = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { text.append("-") }
            text.append(character)
        }
        return text
    }

    public func send(_ notification: PushNotification) async throws(DeliveryError) -> PushOutcome {
        let body = try Self.body(of: notification)
        var renewed = false
        while true {
            let token = try await credential.value()
            let response = try await client.execute(
                request(for: notification, body: body, token: token), to: configuration.url)
            let reason = Self.reason(in: response.body)
            switch (response.status, reason) {
            case (200, _):
                return .delivered
            case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"):
                return .deviceGone(reason: "APNs answered \(response.status) \(reason)")
            case (403, "ExpiredProviderToken") where !renewed:
                await credential.expire(token)
                renewed = true
                continue
            case (429, _), (500..., _):
                return .retry(after: response.retryAfter, reason: "APNs answered \(response.status) \(reason)")
            case (401, _), (403, _), (404, _), (405, _):
                throw DeliveryError(
                    .rejected,
                    "APNs at \(configuration.url) answered \(response.status) \(reason): check --apns-key-file, "
                        + "--apns-key-id, --apns-team-id and --apns-url")
            default:
                return .dropped(reason: "APNs answered \(response.status) \(reason)")
            }
        }
    }

    private func request(for notification: PushNotification, body: [UInt8], token: String) -> HTTPClientRequest {
        let path = notification.token.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? ""
        var request = HTTPClientRequest(url: "\(configuration.url)/3/device/\(path)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(token)")
        request.headers.add(name: "apns-topic", value: configuration.topic ?? notification.appID)
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-id", value: Self.apnsID(of: notification.id))
        if notification.event.utf8.count <= 64 {
            request.headers.add(name: "apns-collapse-id", value: notification.event)
        }
        let expiration = Int64(Date().timeIntervalSince1970) + configuration.expiration.components.seconds
        request.headers.add(name: "apns-expiration", value: String(expiration))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        return request
    }

    /// The `reason` of an APNs error body, or `(no reason)`.
    static func reason(in body: [UInt8]) -> String {
        struct Answer: Decodable { var reason: String? }
        return (try? JSONDecoder().decode(Answer.self, from: Data(body)))?.reason ?? "(no reason)"
    }

    public func shutdown() async { await client.shutdown() }
}
