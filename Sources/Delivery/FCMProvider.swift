import AsyncHTTPClient
import EventLog
import Foundation
import JWTKit
import NIOCore
import Projections

/// How Parley reaches Firebase Cloud Messaging (HTTP v1): a Google service account, and where.
public struct FCMConfiguration: Sendable {
    /// The service account's address (`client_email`): the JWT's issuer.
    public var clientEmail: String
    /// The service account's key id (`private_key_id`), the JWT's `kid` when the file has one.
    public var privateKeyID: String?
    /// The signing key (`private_key`, an RSA key in PEM).
    let key: Insecure.RSA.PrivateKey
    /// Where a signed JWT is exchanged for an access token (`token_uri`).
    public var tokenURL: String
    /// The Firebase project (`project_id`).
    public var projectID: String
    /// The service's base URL: `https://fcm.googleapis.com`.
    public var url: String
    /// How long one request may take before it counts as failed.
    public var timeout: Duration = .seconds(30)
    /// How long connecting may take before the request counts as failed.
    public var connectTimeout: Duration = .seconds(10)
    /// PEM certificates to trust besides the system's roots (a TLS proxy's); nil for none.
    public var trustedCertificates: [UInt8]?

    /// The default base URL.
    public static let defaultURL = "https://fcm.googleapis.com"
    /// The OAuth 2 scope an access token is asked for.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    /// A configuration from a service-account JSON file's bytes (`source` names it in errors), posting to `url`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for a file that is not a service account's JSON, lacks
    ///   `client_email`, `private_key`, `token_uri` or `project_id`, holds a key that is not a PEM RSA key, or a
    ///   URL (its `token_uri`, or `url`) that is not https (http only to a loopback address).
    public init(serviceAccount json: [UInt8], source: String, url: String = defaultURL) throws(DeliveryError) {
        struct Account: Decodable {
            var clientEmail: String?
            var privateKey: String?
            var privateKeyId: String?
            var tokenUri: String?
            var projectId: String?
        }
        let account: Account
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            account = try decoder.decode(Account.self, from: Data(json))
        } catch {
            throw DeliveryError(
                .invalidConfiguration, "the FCM service account \(source) is not a JSON object: \(error)")
        }
        func field(_ value: String?, _ name: String) throws(DeliveryError) -> String {
            guard let value, !value.isEmpty else {
                throw DeliveryError(
                    .invalidConfiguration,
                    "the FCM service account \(source) has no '\(name)' (download the key of a service account from "
                        + "the Firebase console: Project settings, Service accounts)")
            }
            return value
        }
        clientEmail = try field(account.clientEmail, "client_email")
        let pem = try field(account.privateKey, "private_key")
        projectID = try field(account.projectId, "project_id")
        let tokenURI = try field(account.tokenUri, "token_uri")
        do {
            key = try Insecure.RSA.PrivateKey(pem: pem)
        } catch {
            throw DeliveryError(
                .invalidConfiguration, "the 'private_key' of the FCM service account \(source) is not a PEM RSA key")
        }
        guard projectID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw DeliveryError(
                .invalidConfiguration,
                "the 'project_id' '\(projectID)' of the FCM service account \(source) is not a project id")
        }
        privateKeyID = account.privateKeyId.flatMap { $0.isEmpty ? nil : $0 }
        tokenURL = try PushHTTPClient.baseURL(tokenURI, what: "the FCM service account \(source)'s token_uri")
        self.url = try PushHTTPClient.baseURL(url, what: "FCM")
    }
}

/// Sends notifications through Firebase Cloud Messaging's HTTP v1 API, authorized by an OAuth 2 access token that
/// a service account's signed JWT is exchanged for.
///
/// The access token: an RS256 JWT (claims `iss` the service account, `scope` firebase.messaging, `aud` the token
/// URL, `iat` and `exp` an hour later; `kid` the key id) posted to the service account's `token_uri` as
/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`; it is used until 60 s before the
/// `expires_in` the answer gives, or until FCM answers 401 (then a new one is fetched and the send tried once more).
///
/// Each notification is a `POST <url>/v1/projects/<project>/messages:send` of
/// `{"message":{"token":…,"notification":{"title":…,"body":…},"data":{…},"android":{…},"apns":{…}}}`: `data`
/// holds `id`, `event`, `kind`, `position`, `badge` and the room or activity (all strings, as FCM requires); the
/// badge also goes to Android (`notification_count`) and, for an iOS app reached through FCM, to `aps.badge`.
///
/// Answers: 200 is delivered. 404 `UNREGISTERED`, and 400 `INVALID_ARGUMENT` about the token, mean the device is
/// gone (``PushOutcome/deviceGone(reason:)``). 429 and every 5xx are tried again later, honouring `Retry-After`.
/// Another 401, a 403 other than `SENDER_ID_MISMATCH`, and a 404 not about the token say the service account or
/// project is wrong — true of every notification — so the delivery fails (and is retried, then parked). Any other
/// 4xx is about this one notification: it is logged and counted as done (``PushOutcome/dropped(reason:)``) rather
/// than block the subscription forever — that notification is lost.
public final class FCMProvider: PushProvider {
    public let configuration: FCMConfiguration
    public var name: String { "FCM" }
    private let client: PushHTTPClient
    private let credential: ProviderCredential

    /// A provider for `configuration`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` for trusted certificates that cannot be read or a
    ///   timeout that is not above 0.
    public init(_ configuration: FCMConfiguration) throws(DeliveryError) {
        let client = try PushHTTPClient(
            what: "FCM", timeout: configuration.timeout, connectTimeout: configuration.connectTimeout,
            trustedCertificates: configuration.trustedCertificates)
        credential = ProviderCredential { () throws(DeliveryError) in
            try await Self.accessToken(configuration, client: client)
        }
        self.client = client
        self.configuration = configuration
    }

    /// Access tokens fetched so far.
    public var tokensMade: Int { get async { await credential.minted } }

    /// The signed JWT that `configuration`'s service account asks for an access token with, issued at `issuedAt`.
    /// - Throws: ``DeliveryError/Code/invalidConfiguration`` when it cannot be signed.
    static func assertion(_ configuration: FCMConfiguration, issuedAt: Date) async throws(DeliveryError) -> String {
        struct Claims: JWTPayload {
            var iss: IssuerClaim
            var scope: String
            var aud: AudienceClaim
            var iat: IssuedAtClaim
            var exp: ExpirationClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        do {
            let kid = configuration.privateKeyID.map { JWKIdentifier(string: $0) }
            let keys = await JWTKeyCollection().add(rsa: configuration.key, digestAlgorithm: .sha256, kid: kid)
            let now = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
            let claims = Claims(
                iss: IssuerClaim(value: configuration.clientEmail), scope: FCMConfiguration.scope,
                aud: AudienceClaim(value: configuration.tokenURL), iat: IssuedAtClaim(value: now),
                exp: ExpirationClaim(value: now.addingTimeInterval(3600)))
            return try await keys.sign(claims, kid: kid)
        } catch {
            throw DeliveryError(
                .invalidConfiguration, "cannot sign the FCM service account's JWT: \(error)", cause: error)
        }
    }

    /// A new access token for `configuration`, and how long to use it.
    /// - Throws: ``DeliveryError/Code/unreachable`` when the token URL did not answer, ``DeliveryError/Code/rejected``
    ///   when it refused (the message gives its `error` and `error_description`, never the assertion).
    static func accessToken(_ configuration: FCMConfiguration, client: PushHTTPClient) async throws(DeliveryError)
        -> ProviderCredential.Minted
    {
        let assertion = try await assertion(configuration, issuedAt: Date())
        var request = HTTPClientRequest(url: configuration.tokenURL)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        request.body = .bytes(ByteBuffer(string: form))
        let response = try await client.execute(request, to: configuration.tokenURL)
        struct Answer: Decodable {
            var accessToken: String?
            var expiresIn: Int64?
            var error: String?
            var errorDescription: String?
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let answer = try? decoder.decode(Answer.self, from: Data(response.body))
        guard response.status == 200, let token = answer?.accessToken, !token.isEmpty else {
            let why = [answer?.error, answer?.errorDescription].compactMap { $0 }.joined(separator: ": ")
            throw DeliveryError(
                .rejected,
                "the FCM token URL \(configuration.tokenURL) answered \(response.status)"
                    + (why.isEmpty ? " without an access token" : " (\(why))")
                    + ": check --fcm-service-account")
        }
        // Renewed a minute before it expires (an hour, as Google issues them, when the answer does not say).
        let lifetime = max(answer?.expiresIn ?? 3600, 61) - 60
        return ProviderCredential.Minted(value: token, lifetime: .seconds(lifetime))
    }

    /// The body FCM gets for `notification`: JSON, keys sorted.
    public static func body(of notification: PushNotification) throws(DeliveryError) -> [UInt8] {
        struct Notification: Encodable {
            var title: String
            var body: String?
        }
        struct AndroidNotification: Encodable {
            var count: Int
            enum CodingKeys: String, CodingKey { case count = "notification_count" }
        }
        struct Android: Encodable {
            var priority = "HIGH"
            var notification: AndroidNotification
        }
        struct APS: Encodable {
            var badge: Int
            var sound = "default"
        }
        struct APNsPayload: Encodable { var aps: APS }
        struct APNs: Encodable { var payload: APNsPayload }
        struct Message: Encodable {
            var token: String
            var notification: Notification
            var data: [String: String]
            var android: Android
            var apns: APNs
        }
        struct Envelope: Encodable { var message: Message }
        var data = [
            "id": notification.id, "event": notification.event, "kind": notification.kind.rawValue,
            "position": String(notification.position), "badge": String(notification.badge),
        ]
        if let room = notification.room { data["room"] = room.rawValue }
        if let activity = notification.activity { data["activity"] = activity.rawValue }
        let message = Message(
            token: notification.token, notification: Notification(title: notification.title, body: notification.body),
            data: data, android: Android(notification: AndroidNotification(count: notification.badge)),
            apns: APNs(payload: APNsPayload(aps: APS(badge: notification.badge))))
        do {
            return Array(try JSONText.encodeBytes(Envelope(message: message), pretty: false))
        } catch {
            throw DeliveryError(.invalidConfiguration, "cannot encode notification \(notification.id): \(error)")
        }
    }

    public func send(_ notification: PushNotification) async throws(DeliveryError) -> PushOutcome {
        let body = try Self.body(of: notification)
        let url = "\(configuration.url)/v1/projects/\(configuration.projectID)/messages:send"
        var renewed = false
        while true {
            let token = try await credential.value()
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(token)")
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, to: configuration.url)
            let error = FCMErrorAnswer(response.body)
            let said = "FCM answered \(response.status) \(error.summary)"
            switch response.status {
            case 200:
                return .delivered
            case 404 where error.codes.contains("UNREGISTERED"):
                return .deviceGone(reason: said)
            case 400 where error.codes.contains("INVALID_ARGUMENT") && error.isAboutToken:
                return .deviceGone(reason: said)
            case 401 where !renewed:
                await credential.expire(token)
                renewed = true
                continue
            case 429, 500...:
                return .retry(after: response.retryAfter, reason: said)
            case 403 where error.codes.contains("SENDER_ID_MISMATCH"):
                return .dropped(reason: said)
            case 401, 403, 404:
                throw DeliveryError(
                    .rejected,
                    "\(said) for project \(configuration.projectID): check --fcm-service-account and --fcm-url")
            default:
                return .dropped(reason: said)
            }
        }
    }

    public func shutdown() async { await client.shutdown() }
}

/// What an FCM error answer says: `{"error":{"code":…,"message":…,"status":…,"details":[…]}}`.
struct FCMErrorAnswer {
    /// The `status` and every detail's `errorCode` (`UNREGISTERED`, `INVALID_ARGUMENT`, `QUOTA_EXCEEDED`…).
    var codes: Set<String> = []
    var message = ""
    /// Whether a field violation names `message.token`, or the message speaks of the registration token.
    var isAboutToken = false

    init(_ body: [UInt8]) {
        struct Violation: Decodable { var field: String? }
        struct Detail: Decodable {
            var errorCode: String?
            var fieldViolations: [Violation]?
        }
        struct Failure: Decodable {
            var message: String?
            var status: String?
            var details: [Detail]?
        }
        struct Answer: Decodable { var error: Failure? }
        guard let failure = (try? JSONDecoder().decode(Answer.self, from: Data(body)))?.error else { return }
        message = failure.message ?? ""
        codes = Set([failure.status].compactMap { $0 } + (failure.details ?? []).compactMap(\.errorCode))
        let fields = (failure.details ?? []).flatMap { $0.fieldViolations ?? [] }.compactMap(\.field)
        isAboutToken = fields.contains("message.token") || message.lowercased().contains("registration token")
    }

    /// The codes and message, for a log line.
    var summary: String {
        let text = (codes.sorted() + (message.isEmpty ? [] : [message])).joined(separator: " ")
        return text.isEmpty ? "(no error body)" : text
    }
}
