import Crypto
import Foundation

/// Seals an owner's personal fields under their data key (``KeyStore``), and opens them again: AES-256-GCM with a
/// random 96-bit nonce, the plaintext first shrunk by the static text code when that makes it smaller
/// (docs/ERASURE.md gives the reasons, docs/FORMAT.md the bytes).
///
/// ```
/// seal := header:1 nonce:12 ciphertext tag:16
/// header := layoutVersion << 4 | coding     (1 << 4 | 0: as given, 1 << 4 | 1: static text code)
/// ```
///
/// The header byte and the caller's `context` are authenticated (GCM's associated data), so a seal opens only with
/// the key and the context it was made with; the context itself is not stored. One seal per event holds all of
/// its personal fields: one nonce and one tag per event, never per field.
public enum PersonalSeal {
    /// The layout this build writes and reads (the high four bits of a seal's first byte).
    public static let layoutVersion: UInt8 = 1
    /// The bytes a seal adds to its (coded) plaintext: header, nonce and tag.
    public static let overhead = 1 + nonceSize + tagSize
    static let nonceSize = 12
    static let tagSize = 16

    /// How the plaintext is held inside a seal.
    public enum Coding: UInt8, Sendable, CaseIterable {
        /// As given.
        case none = 0
        /// The static text code (`TextCode`): ~4.8 bits per byte of English text.
        case text = 1
    }

    /// Seals `plaintext` under `key`. With `coding` nil (the default) it takes the static text code when that is
    /// smaller than the plaintext, else none.
    /// The nonce comes from `SealNonces` (the system's secure random source, drawn a few hundred bytes at a time).
    /// - Throws: `.io` with errno when the system gives no random bytes; `.io` with swift-crypto's error as the
    ///   cause when AES-GCM fails.
    public static func seal(
        _ plaintext: some Collection<UInt8>, with key: DataKey, context: [UInt8] = [], coding: Coding? = nil
    ) throws(EventLogError) -> [UInt8] {
        let plain = Array(plaintext)
        let chosen = coding ?? (plain.withUnsafeBytes { TextCode.codedSize($0) } < plain.count ? .text : .none)
        let header = layoutVersion << 4 | chosen.rawValue
        var coded: [UInt8] = []
        defer { wipe(&coded) }
        if chosen == .text { plain.withUnsafeBytes { TextCode.encode($0, appendingTo: &coded) } }
        let combined: Data
        do {
            let nonce = try AES.GCM.Nonce(data: SealNonces.next())
            let box = try AES.GCM.seal(
                chosen == .text ? coded : plain, using: key.symmetricKey, nonce: nonce,
                authenticating: [header] + context)
            // Always there for a 12-byte nonce: nonce ‖ ciphertext ‖ tag.
            guard let bytes = box.combined else { throw EventLogError(.io, "AES-GCM gave no combined seal") }
            combined = bytes
        } catch let error as EventLogError {
            throw error
        } catch {
            throw EventLogError(.io, "AES-GCM could not seal \(plain.count) bytes: \(error)", cause: error)
        }
        var sealed = [UInt8]()
        sealed.reserveCapacity(1 + combined.count)
        sealed.append(header)
        sealed.append(contentsOf: combined)
        return sealed
    }

    /// The plaintext of `sealed`, opened with `key` and the `context` it was sealed with.
    /// - Throws: `.malformedSeal` when it is shorter than a seal or of another layout or coding;
    ///   `.sealAuthenticationFailed` when it does not authenticate (another key or context, or altered bytes).
    public static func open(_ sealed: some Collection<UInt8>, with key: DataKey, context: [UInt8] = [])
        throws(EventLogError) -> [UInt8]
    {
        let bytes = Array(sealed)
        guard bytes.count >= overhead else {
            throw EventLogError(
                .malformedSeal, "\(bytes.count) bytes are too few for a seal (at least \(overhead))")
        }
        let header = bytes[0]
        guard header >> 4 == layoutVersion, let coding = Coding(rawValue: header & 0x0F) else {
            throw EventLogError(
                .malformedSeal,
                "a seal of layout \(header >> 4), coding \(header & 0x0F): this build reads layout \(layoutVersion), "
                    + "codings \(Coding.allCases.map(\.rawValue))")
        }
        var opened: Data
        do {
            // After the header, a seal is swift-crypto's combined form: nonce ‖ ciphertext ‖ tag.
            let box = try AES.GCM.SealedBox(combined: bytes[1...])
            opened = try AES.GCM.open(box, using: key.symmetricKey, authenticating: [header] + context)
        } catch {
            throw EventLogError(
                .sealAuthenticationFailed,
                "a seal of \(bytes.count) bytes does not open: it was sealed under another key or context, or "
                    + "altered since",
                cause: error)
        }
        defer { opened.resetBytes(in: 0..<opened.count) }
        guard coding == .text else { return Array(opened) }
        let decoded = opened.withUnsafeBytes { TextCode.decode($0) }
        guard let decoded else {
            // Authentic bytes that do not decode: a bug in the writer, never an attacker (the tag covers them).
            throw EventLogError(.malformedSeal, "an authentic seal holds a text code that does not decode")
        }
        return decoded
    }

    /// The plaintext of `sealed`, opened with `owner`'s key in `keys`.
    /// - Throws: `.keyErased` when the owner was erased (the seal can never be opened); `.keyMissing` when the
    ///   owner has no key; what ``open(_:with:context:)`` and the store's lookup throw.
    public static func open(
        _ sealed: some Collection<UInt8>, owner: KeyOwner, in keys: any KeyStore, context: [UInt8] = []
    ) throws(EventLogError) -> [UInt8] {
        switch try keys.lookup(owner) {
        case .key(let key):
            return try open(sealed, with: key, context: context)
        case .erased:
            throw EventLogError(.keyErased, "\(owner) was erased: what was sealed under their key cannot be read")
        case .absent:
            throw EventLogError(.keyMissing, "\(owner) has no data key: nothing sealed for them can be opened")
        }
    }
}
