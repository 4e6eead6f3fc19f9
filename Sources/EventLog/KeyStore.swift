import Crypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the per-user data keys of crypto-shredding live (docs/ERASURE.md): one 256-bit AES key per owner,
/// created once, and destroyed for good when the owner is erased, so that what was sealed under it
/// (``PersonalSeal``) can never be read again while the log, its CRCs and its hash chain stay as they were.
///
/// Implementations: ``FileKeyStore`` (a file beside a local log), ``MemoryKeyStore`` (tests, `MemoryStore`);
/// a replicated store adds its own. Every one passes the same conformance checks.
///
/// The contract:
/// - ``createKeys(for:)`` returns the owner's existing key when there is one (idempotent), and makes each new
///   key durable before it returns: nothing may be sealed under a key that a crash could lose.
/// - ``destroyKey(for:)`` is durable when it returns, safe to call again (and for an owner that never had a key:
///   the owner is then erased all the same), and leaves, after a crash at any moment, either the key intact
///   (call it again) or the owner erased — never a key half gone.
/// - An erased owner stays erased: ``lookup(_:)`` answers ``KeyLookup/erased`` (never ``KeyLookup/absent``), and
///   ``createKeys(for:)`` refuses it with `.keyErased`.
/// - Owners are compared by their bytes (``KeyOwner``), never as `String`s.
public protocol KeyStore: AnyObject, Sendable {
    /// The owner's key, or whether it was erased or never made.
    /// - Throws: `.closed` after ``close()``; a reader beside a writer may throw `.io` when it rereads the file.
    func lookup(_ owner: KeyOwner) throws(EventLogError) -> KeyLookup

    /// Each owner's key, made (and made durable) for those that have none; in the order of `owners`.
    /// - Throws: `.keyErased` (nothing made) when one of them was erased; `.readOnly` on a reader; `.io` or
    ///   `.noSpace` with errno when the write or sync fails (the store then takes no more writes: reopen it).
    func createKeys(for owners: [KeyOwner]) throws(EventLogError) -> [DataKey]

    /// Destroys the owner's key for good and remembers the owner as erased. Durable when it returns.
    /// - Throws: `.readOnly` on a reader; `.io` or `.noSpace` with errno when a write or sync fails (the store
    ///   then takes no more writes; the erasure is finished or undone when it is reopened, and may be retried).
    func destroyKey(for owner: KeyOwner) throws(EventLogError)

    /// Closes the store; later calls throw `.closed`. Safe to call twice.
    func close() throws(EventLogError)
}

extension KeyStore {
    /// The owner's key; nil when it has none or it was destroyed (``isErased(_:)`` tells which).
    /// - Throws: as ``lookup(_:)``.
    public func key(for owner: KeyOwner) throws(EventLogError) -> DataKey? {
        if case .key(let key) = try lookup(owner) { return key }
        return nil
    }

    /// Whether the owner was erased (its key destroyed).
    /// - Throws: as ``lookup(_:)``.
    public func isErased(_ owner: KeyOwner) throws(EventLogError) -> Bool { try lookup(owner) == .erased }

    /// The owner's key, made (durably) when it has none.
    /// - Throws: as ``createKeys(for:)``.
    public func createKey(for owner: KeyOwner) throws(EventLogError) -> DataKey {
        let keys = try createKeys(for: [owner])
        return keys[0]
    }
}

/// What a key store holds for one owner.
public enum KeyLookup: Sendable, Equatable {
    /// The owner's live key.
    case key(DataKey)
    /// The owner was erased: the key is gone for good.
    case erased
    /// The owner never had a key.
    case absent
}

/// Whose key: a user id as its UTF-8 bytes.
///
/// Two owners are equal, hash and order by their bytes, as the engine's ids do (`StringIdentifier`): Swift's
/// `String` would call `"jos\u{E9}"` and `"jose\u{301}"` equal, where the log holds two users with two keys.
public struct KeyOwner: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id's bytes.
    public let bytes: [UInt8]

    /// The owner whose id is `id` (its UTF-8 bytes, as they are).
    public init(_ id: String) { bytes = Array(id.utf8) }

    /// The owner whose id has these bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Orders by bytes.
    public static func < (a: KeyOwner, b: KeyOwner) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// Equal when the bytes are.
    public static func == (a: KeyOwner, b: KeyOwner) -> Bool { a.bytes == b.bytes }

    /// Hashes the bytes at once (an array of bytes would be hashed byte by byte).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// The id as text (invalid UTF-8 repaired), for messages.
    public var description: String { String(decoding: bytes, as: UTF8.self) }

    /// The longest id a key store keeps (the key file gives it two bytes).
    public static let maximumByteCount = 4096
}

/// A 256-bit AES key of one owner.
///
/// Held as swift-crypto's `SymmetricKey`, whose storage is zeroed when it is freed. Equality compares in
/// constant time.
public struct DataKey: Sendable, Equatable {
    let symmetricKey: SymmetricKey

    /// The key's size in bytes.
    public static let byteCount = 32

    /// A new key from the system's secure random source.
    public static func random() -> DataKey { DataKey(symmetricKey: SymmetricKey(size: .bits256)) }

    init(symmetricKey: SymmetricKey) { self.symmetricKey = symmetricKey }

    /// The key with these 32 bytes (a key read back from a store, or a test's fixed key).
    package init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        var copy = Array(bytes)
        defer { wipe(&copy) }
        symmetricKey = SymmetricKey(data: copy)
    }

    /// Calls `body` with the key's bytes (to write them to a key store), valid only during the call.
    package func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try symmetricKey.withUnsafeBytes(body)
    }
}

/// Overwrites `bytes` with zeros in a way the optimiser keeps (a buffer that held keys or personal plaintext, before
/// it is freed). Best effort: copies the array made earlier are not reached.
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        guard let base = raw.baseAddress, raw.count > 0 else { return }
        #if canImport(Glibc)
            explicit_bzero(base, raw.count)
        #else
            _ = memset_s(base, raw.count, 0, raw.count)
        #endif
    }
}
