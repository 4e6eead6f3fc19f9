import EventLog
import Foundation
import JWTKit
import Projections

/// The claims Parley reads from an access token: `sub` is the Parley user id, `exp` is required, and
/// `parley_role: "admin"` grants the admin routes. Tokens come from the app's identity provider (or
/// `parley token` in development).
public struct AccessClaims: JWTPayload, Equatable {
    /// The user id.
    public var sub: SubjectClaim
    /// When the token stops being accepted.
    public var exp: ExpirationClaim
    /// `admin` for the admin routes; absent for a user.
    public var role: String?
    /// Who issued it (checked against the expected issuer of a JWKS provider).
    public var iss: IssuerClaim?
    /// Whom it is for (checked against the expected audience of a JWKS provider).
    public var aud: AudienceClaim?

    enum CodingKeys: String, CodingKey {
        case sub, exp, iss, aud
        case role = "parley_role"
    }

    /// Makes claims for `user`, valid until `expires`.
    public init(user: String, expires: Date, admin: Bool = false) {
        self.sub = SubjectClaim(value: user)
        self.exp = ExpirationClaim(value: expires)
        self.role = admin ? "admin" : nil
    }

    /// Refuses an expired token.
    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Who is asking: the token's subject, and whether it may use the admin routes.
public struct Identity: Sendable, Hashable {
    /// The user every command acts as.
    public var user: UserID
    /// Whether the token carries `parley_role: admin`.
    public var isAdmin: Bool

    /// Makes a value from its fields.
    public init(user: UserID, isAdmin: Bool) {
        self.user = user
        self.isAdmin = isAdmin
    }
}

/// Why a key file was refused.
public struct KeyFileError: Error, CustomStringConvertible {
    /// What is wrong, naming the file.
    public var description: String
}

/// Checks bearer tokens: HS256 with a shared secret, or ES256/RS256 with the public keys of a JWKS file.
/// Any failure — malformed, unsigned (`alg: none`), signed with another key or algorithm, expired, no
/// subject — is the same `nil`: the caller answers 401 and says nothing more.
public struct TokenVerifier: Sendable {
    let keys: JWTKeyCollection
    /// For an outside identity provider: the `iss` and `aud` a token must carry. Its keys sign tokens for
    /// every app that uses it (every Firebase project shares Google's keys), so a signature alone does not
    /// say the token was meant for this one.
    let issuer: String?
    let audience: String?
    /// Whether `parley_role: admin` in a token counts. Always for Parley's own secret; for an outside
    /// provider only when asked, since anyone who can set custom claims there could set it.
    let trustsRoleClaim: Bool
    /// Tokens verified already, until they expire: an app sends the same token on every request, and checking
    /// its signature and claims again costs more than the rest of a small request.
    let verified = VerifiedTokens()

    init(keys: JWTKeyCollection, issuer: String? = nil, audience: String? = nil, trustsRoleClaim: Bool = true) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.trustsRoleClaim = trustsRoleClaim
    }

    /// The smallest HS256 secret accepted, in bytes (the digest's size, as RFC 7518 §3.2 asks).
    public static let minimumSecretLength = 32

    /// A verifier for HS256 tokens signed with `secret`.
    /// - Throws: ``KeyFileError`` when the secret is shorter than ``minimumSecretLength`` bytes.
    public static func hmac(secret: String) async throws -> TokenVerifier {
        guard secret.utf8.count >= minimumSecretLength else {
            throw KeyFileError(
                description: "the HS256 secret is \(secret.utf8.count) bytes; use at least \(minimumSecretLength) "
                    + "(for example: head -c 48 /dev/urandom | base64 > secret)")
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TokenVerifier(keys: keys)
    }

    /// A verifier for HS256 tokens signed with the secret in `path` (surrounding whitespace ignored).
    /// - Throws: ``KeyFileError`` naming the file when it cannot be read or the secret is too short.
    public static func hmac(secretFile path: String) async throws -> TokenVerifier {
        do {
            return try await hmac(secret: try readSecret(path))
        } catch let error as KeyFileError {
            throw KeyFileError(description: "\(path): \(error.description)")
        }
    }

    /// A verifier for ES256/RS256 tokens whose public keys are in the JWKS file at `path`, issued by `issuer`
    /// for `audience` (Firebase: `https://securetoken.google.com/<project>` and `<project>`). The admin
    /// role is read from tokens only when `trustingRoleClaim`.
    /// - Throws: ``KeyFileError`` naming the file when it cannot be read or holds no usable key.
    public static func jwks(file path: String, issuer: String, audience: String, trustingRoleClaim: Bool = false)
        async throws -> TokenVerifier
    {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw KeyFileError(description: "cannot read the JWKS file \(path): \(error.localizedDescription)")
        }
        let keys = JWTKeyCollection()
        do {
            _ = try await keys.add(jwksJSON: text)
        } catch {
            throw KeyFileError(description: "\(path) is not a usable JWKS (ES256/RS256 public keys): \(error)")
        }
        guard !issuer.isEmpty, !audience.isEmpty else {
            throw KeyFileError(description: "a JWKS provider needs its issuer and audience to check tokens against")
        }
        return TokenVerifier(keys: keys, issuer: issuer, audience: audience, trustsRoleClaim: trustingRoleClaim)
    }

    /// The secret in `path`, without surrounding whitespace.
    static func readSecret(_ path: String) throws -> String {
        do {
            return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw KeyFileError(description: "cannot read the secret file: \(error.localizedDescription)")
        }
    }

    /// Who `token` names, or nil when it is not a valid, unexpired token with a subject.
    public func identity(token: String) async -> Identity? {
        if let known = verified.identity(token) { return known }
        guard token.utf8.count <= 16 << 10,
            let claims = try? await keys.verify(token, as: AccessClaims.self),
            !claims.sub.value.isEmpty
        else { return nil }
        if let issuer, claims.iss?.value != issuer { return nil }
        if let audience, claims.aud?.value.contains(audience) != true { return nil }
        let identity = Identity(
            user: UserID(claims.sub.value), isAdmin: trustsRoleClaim && claims.role == "admin")
        verified.insert(token, identity, expires: claims.exp.value)
        return identity
    }
}

/// Signs HS256 access tokens (`parley token`, `parley serve --dev`, tests).
public enum TokenIssuer {
    /// A token for `user`, valid for `ttl` seconds, signed with `secret`.
    public static func token(user: String, admin: Bool = false, ttl: Double, secret: String) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(AccessClaims(user: user, expires: Date().addingTimeInterval(ttl), admin: admin))
    }

    /// A token signed with the secret in `path`.
    /// - Throws: ``KeyFileError`` naming the file.
    public static func token(user: String, admin: Bool = false, ttl: Double, secretFile path: String) async throws
        -> String
    {
        let secret: String
        do {
            secret = try TokenVerifier.readSecret(path)
        } catch let error as KeyFileError {
            throw KeyFileError(description: "\(path): \(error.description)")
        }
        guard secret.utf8.count >= TokenVerifier.minimumSecretLength else {
            throw KeyFileError(
                description: "\(path): the HS256 secret is \(secret.utf8.count) bytes; use at least "
                    + "\(TokenVerifier.minimumSecretLength)")
        }
        return try await token(user: user, admin: admin, ttl: ttl, secret: secret)
    }
}

/// A bounded map of verified tokens to who they name, each until its `exp`.
final class VerifiedTokens: Sendable {
    static let capacity = 50_000
    private let entries = PlainMutex<[String: (identity: Identity, expires: Date)]>([:])

    func identity(_ token: String) -> Identity? {
        let now = Date()
        return entries.withLock { entries in
            guard let entry = entries[token] else { return nil }
            guard entry.expires > now else {
                entries[token] = nil
                return nil
            }
            return entry.identity
        }
    }

    func insert(_ token: String, _ identity: Identity, expires: Date) {
        entries.withLock { entries in
            // Full: start again rather than track ages; the cost is one signature check per active token.
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = (identity, expires)
        }
    }
}
