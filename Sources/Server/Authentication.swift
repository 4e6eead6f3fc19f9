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
/// subject, a JWKS token whose `kid` names no key of the file — is the same `nil`: the caller answers 401 and
/// says nothing more.
public struct TokenVerifier: Sendable {
    /// Where the keys come from.
    enum Keys: Sendable {
        /// Parley's own HS256 secret.
        case secret(JWTKeyCollection)
        /// An identity provider's public keys, each named by its `kid`.
        case jwks(JWKSFile)
    }

    let keys: Keys
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

    init(keys: Keys, issuer: String? = nil, audience: String? = nil, trustsRoleClaim: Bool = true) {
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
        return TokenVerifier(keys: .secret(keys))
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
    /// role is read from tokens only when `trustingRoleClaim`. A token must name its key (`kid`); one that
    /// names a key the file does not hold makes the verifier read the file again if it changed (a provider's
    /// keys rotate: write the new set over the file), and is refused if the key is still not there.
    /// - Throws: ``KeyFileError`` naming the file when it cannot be read or holds no usable key.
    public static func jwks(file path: String, issuer: String, audience: String, trustingRoleClaim: Bool = false)
        async throws -> TokenVerifier
    {
        guard !issuer.isEmpty, !audience.isEmpty else {
            throw KeyFileError(description: "a JWKS provider needs its issuer and audience to check tokens against")
        }
        return TokenVerifier(
            keys: .jwks(try await JWKSFile(path: path)), issuer: issuer, audience: audience,
            trustsRoleClaim: trustingRoleClaim)
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
        await verify(token: token)?.identity
    }

    /// Who `token` names and until when, or nil when it is not a valid, unexpired token with a subject.
    func verify(token: String) async -> (identity: Identity, expires: Date)? {
        // A compact JWT is ASCII; refusing anything else first also keeps the cache's keys one spelling each.
        guard token.utf8.count <= 16 << 10, token.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        if let known = verified.lookup(token) { return known }
        let collection: JWTKeyCollection
        switch keys {
        case .secret(let secret):
            collection = secret
        case .jwks(let file):
            guard let kid = Self.keyID(of: token), let named = await file.keys(naming: kid) else { return nil }
            collection = named
        }
        guard let claims = try? await collection.verify(token, as: AccessClaims.self), !claims.sub.value.isEmpty
        else { return nil }
        if let issuer, claims.iss?.value != issuer { return nil }
        if let audience, claims.aud?.value.contains(audience) != true { return nil }
        let identity = Identity(
            user: UserID(claims.sub.value), isAdmin: trustsRoleClaim && claims.role == "admin")
        verified.insert(token, identity, expires: claims.exp.value)
        return (identity, claims.exp.value)
    }

    /// The `kid` of a compact JWT's header, unverified (it only picks the key the signature is checked with).
    static func keyID(of token: String) -> String? {
        struct Header: Decodable { var kid: String? }
        guard let encoded = token.split(separator: ".", maxSplits: 1).first else { return nil }
        var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return try? JSONDecoder().decode(Header.self, from: data).kid
    }
}

/// The public keys of a JWKS file, by `kid`, and the file's identity when they were read: a token naming a key
/// that is not there has the file read again, once per change of the file.
final class JWKSFile: Sendable {
    /// What tells one version of the file from the next: an atomic replace changes the file number, an edit in
    /// place the size or the modification time.
    struct Stamp: Equatable {
        var file: Int?
        var size: Int?
        var modified: Date?
    }

    struct Loaded {
        var keys: JWTKeyCollection
        var kids: Set<String>
        var stamp: Stamp?
    }

    let path: String
    private let loaded: PlainMutex<Loaded>

    /// Reads the file.
    /// - Throws: ``KeyFileError`` naming the file when it cannot be read or holds no usable key.
    init(path: String) async throws {
        self.path = path
        loaded = PlainMutex(try await Self.load(path))
    }

    /// The keys, when one of them is named `kid` (reading the file again first if it changed since).
    func keys(naming kid: String) async -> JWTKeyCollection? {
        let current = loaded.withLock { $0 }
        if current.kids.contains(kid) { return current.keys }
        guard let stamp = Self.stamp(path), stamp != current.stamp, let fresh = try? await Self.load(path) else {
            return nil
        }
        loaded.withLock { $0 = fresh }
        return fresh.kids.contains(kid) ? fresh.keys : nil
    }

    private static func load(_ path: String) async throws -> Loaded {
        let stamp = Self.stamp(path)
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw KeyFileError(description: "cannot read the JWKS file \(path): \(error.localizedDescription)")
        }
        let keys = JWTKeyCollection()
        let kids: Set<String>
        do {
            let set = try JSONDecoder().decode(JWKS.self, from: Data(text.utf8))
            _ = try await keys.add(jwks: set)
            kids = Set(set.keys.compactMap { $0.keyIdentifier?.string })
        } catch {
            throw KeyFileError(description: "\(path) is not a usable JWKS (ES256/RS256 public keys): \(error)")
        }
        return Loaded(keys: keys, kids: kids, stamp: stamp)
    }

    private static func stamp(_ path: String) -> Stamp? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        return Stamp(
            file: (attributes[.systemFileNumber] as? NSNumber)?.intValue,
            size: (attributes[.size] as? NSNumber)?.intValue, modified: attributes[.modificationDate] as? Date)
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

    func lookup(_ token: String) -> (identity: Identity, expires: Date)? {
        let now = Date()
        return entries.withLock { entries in
            guard let entry = entries[token] else { return nil }
            guard entry.expires > now else {
                entries[token] = nil
                return nil
            }
            return entry
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
