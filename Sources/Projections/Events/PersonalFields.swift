import EventLog

/// An event type with personal fields, stored sealed under their owner's data key (docs/ERASURE.md).
///
/// A sealed payload wraps the event's ordinary payload:
///
/// ```
/// sealed payload := 0x80  clear  seal
/// clear          := the payload of the event with every personal field empty (its own version byte first)
/// seal           := LEB128 length, PersonalSeal bytes of the personal fields (``writePersonal(to:)``)
/// ```
///
/// The marker is above every schema version, so a build reads plaintext payloads of every version as before and
/// tells a sealed one by its first byte. The seal authenticates the event type's code (its context), so a seal
/// copied into another type's payload does not open; a seal copied into another user's event does not open
/// either, since each user has their own key.
protocol PersonalEvent: CatalogueEvent {
    /// The seal holding this event's personal fields while they are not opened (the fields are then empty);
    /// nil when the fields are held in the clear.
    var sealed: [UInt8]? { get set }

    /// The user whose key seals the personal fields: named by the payload, or (a message's edit, an activity's
    /// update) known from the state.
    func personalOwner(in state: ProjectionState) -> UserID?

    /// Writes the personal fields: the plaintext of the seal.
    func writePersonal(to writer: inout ByteWriter)

    /// Reads the personal fields written by ``writePersonal(to:)`` into this event.
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError)

    /// Sets every personal field to its empty value (nil, an empty text or list).
    mutating func blankPersonal()
}

/// The first byte of a sealed payload (above every schema version).
let sealedPayloadMarker: UInt8 = 0x80

extension PersonalEvent {
    func personalOwner(in state: ProjectionState) -> UserID? { payloadActor.map { UserID($0) } }

    /// Opened with the state's keys: the projections keep these fields in the clear (messages override this and
    /// stay sealed, opened when a query shows them).
    func openedForFold(in state: ProjectionState) -> Self {
        guard sealed != nil, let keys = state.keys else { return self }
        return keys.opened(self, owner: personalOwner(in: state))
    }

    /// The context a seal of this type authenticates: the type's code.
    static var sealContext: [UInt8] { [UInt8(code)] }

    /// The personal fields' plaintext (what is sealed).
    var personalPlaintext: [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writePersonal(to: &writer)
        return writer.bytes
    }

    /// This event with its personal fields sealed under `key`: the fields emptied, the seal in ``sealed``.
    /// An event already sealed, or whose personal fields are all empty, is returned as it is.
    /// - Throws: `.io` when no random nonce or AES-GCM fails (see ``PersonalSeal/seal(_:with:context:coding:)``).
    func sealing(with key: DataKey) throws(EventLogError) -> Self {
        guard sealed == nil else { return self }
        var plain = personalPlaintext
        defer { wipe(&plain) }
        // An event whose personal fields are all empty (a direct room has no name) says nothing to seal.
        var blank = self
        blank.blankPersonal()
        guard plain != blank.personalPlaintext else { return self }
        var copy = self
        copy.sealed = try PersonalSeal.seal(plain, with: key, context: Self.sealContext)
        copy.blankPersonal()
        return copy
    }

    /// This event with its seal opened with `key`: the fields filled, ``sealed`` nil.
    /// - Throws: what ``PersonalSeal/open(_:with:context:)`` throws; `.malformedSeal` when the opened bytes are not
    ///   this type's personal fields.
    func opening(with key: DataKey) throws(EventLogError) -> Self {
        guard let sealed else { return self }
        var plain = try PersonalSeal.open(sealed, with: key, context: Self.sealContext)
        defer { wipe(&plain) }
        var copy = self
        do throws(ByteReaderError) {
            try ByteReader.reading(plain) { (reader: inout ByteReader) throws(ByteReaderError) in
                try copy.readPersonal(from: &reader)
            }
        } catch {
            throw EventLogError(.malformedSeal, "an authentic \(Self.typeName) seal holds \(error.description)")
        }
        copy.sealed = nil
        return copy
    }

    /// This event with `seal` (made from its own fields, see `Engine.presealedFields`) in place of its fields.
    func withSeal(_ seal: [UInt8]) -> Self {
        var copy = self
        copy.sealed = seal
        copy.blankPersonal()
        return copy
    }

    /// The stored payload: the sealed layout when ``sealed`` is set, else the plaintext payload.
    func sealedEncoded() -> [UInt8] {
        guard let sealed else { return encoded() }
        var writer = ByteWriter(capacity: 64 + sealed.count)
        writer.byte(sealedPayloadMarker)
        writer.write(bytes: encoded())
        writer.writeLengthPrefixed(sealed)
        return writer.bytes
    }
}

/// Opens seals with a store's keys, for the projections and the decoders.
///
/// Held by the projection state; its key store may be a reader's, which rereads its file on a miss.
struct PersonalKeys: Sendable {
    let store: any KeyStore

    init(_ store: any KeyStore) { self.store = store }

    /// The owner's key, or nil when it was erased or never made (or the store cannot be read: the fields then
    /// stay sealed, as for an erased owner, rather than failing a fold).
    func key(of owner: UserID) -> DataKey? { try? store.key(for: KeyOwner(owner.rawValue)) }

    /// `event` with its seal opened, or as it is when the owner's key is gone.
    func opened<E: PersonalEvent>(_ event: E, owner: UserID?) -> E {
        guard event.sealed != nil, let owner, let key = key(of: owner) else { return event }
        return (try? event.opening(with: key)) ?? event
    }
}

extension DomainEvent {
    /// The personal-event payload, when this event type has personal fields.
    var personal: (any PersonalEvent)? {
        switch self {
        case .userRegistered(let e): e
        case .profileUpdated(let e): e
        case .roomCreated(let e): e
        case .messageSent(let e): e
        case .messageEdited(let e): e
        case .gratitudeTagged(let e): e
        case .activityHosted(let e): e
        case .activityUpdated(let e): e
        case .reportFiled(let e): e
        case .deviceRegistered(let e): e
        default: nil
        }
    }

    /// Whether the event's personal fields are sealed and not opened (its owner was erased, or no key was at hand).
    public var isSealed: Bool {
        // A switch, not ``personal``: an existential of a large payload is a heap box (commands ask this often).
        switch self {
        case .userRegistered(let e): e.sealed != nil
        case .profileUpdated(let e): e.sealed != nil
        case .roomCreated(let e): e.sealed != nil
        case .messageSent(let e): e.sealed != nil
        case .messageEdited(let e): e.sealed != nil
        case .gratitudeTagged(let e): e.sealed != nil
        case .activityHosted(let e): e.sealed != nil
        case .activityUpdated(let e): e.sealed != nil
        case .reportFiled(let e): e.sealed != nil
        case .deviceRegistered(let e): e.sealed != nil
        default: false
        }
    }

    /// The event as its fold takes it (see ``CatalogueEvent/openedForFold(in:)``), without boxing the payload.
    func openedForFold(in state: ProjectionState) -> DomainEvent {
        switch self {
        case .userRegistered(let e): .userRegistered(e.openedForFold(in: state))
        case .profileUpdated(let e): .profileUpdated(e.openedForFold(in: state))
        case .roomCreated(let e): .roomCreated(e.openedForFold(in: state))
        case .gratitudeTagged(let e): .gratitudeTagged(e.openedForFold(in: state))
        case .activityHosted(let e): .activityHosted(e.openedForFold(in: state))
        case .activityUpdated(let e): .activityUpdated(e.openedForFold(in: state))
        case .reportFiled(let e): .reportFiled(e.openedForFold(in: state))
        case .deviceRegistered(let e): .deviceRegistered(e.openedForFold(in: state))
        default: self
        }
    }

    /// The event with its personal fields sealed under its owner's key in `keys` (made, durably, when the owner has
    /// none and `creating`), or as it is when it has none.
    /// - Throws: `.keyErased` when the owner was erased; `.keyMissing` when the owner has no key and `creating` is
    ///   false; the key store's and the seal's errors.
    func sealing(in keys: any KeyStore, owner: UserID, creating: Bool) throws(EventLogError) -> DomainEvent {
        guard let personal, personal.sealed == nil else { return self }
        let ownerKey = KeyOwner(owner.rawValue)
        let key: DataKey
        switch try keys.lookup(ownerKey) {
        case .key(let found): key = found
        case .erased:
            throw EventLogError(.keyErased, "\(owner.rawValue) was erased: nothing more can be written for them")
        case .absent:
            guard creating else {
                throw EventLogError(.keyMissing, "\(owner.rawValue) has no data key to seal \(typeName) with")
            }
            key = try keys.createKey(for: ownerKey)
        }
        return try personal.sealing(with: key).event
    }

    /// The event with its seal opened by its owner's key — the user its payload names, else `owner` (the record's
    /// actor) — or as it is when it holds no seal or the key is gone.
    func opened(with keys: PersonalKeys, owner: UserID?) -> DomainEvent {
        guard let personal, personal.sealed != nil else { return self }
        let owner = personal.payloadActor.map { UserID($0) } ?? owner
        return keys.opened(personal, owner: owner).event
    }

    /// The stored payload (sealed when the event is).
    func storedPayload() -> [UInt8] {
        switch self {
        case .messageSent(let e): e.sealedEncoded()
        case .messageEdited(let e): e.sealedEncoded()
        default: personal?.sealedEncoded() ?? payload.encoded()
        }
    }

    /// The payload as the engine stores it: personal fields sealed under `owner`'s key in `keys` (made when missing),
    /// for tools and benchmarks that append records themselves.
    /// - Throws: as ``sealing(in:owner:creating:)``.
    public func storedPayload(sealingIn keys: any KeyStore, owner: UserID) throws(EventLogError) -> [UInt8] {
        try sealing(in: keys, owner: owner, creating: true).storedPayload()
    }
}

extension PersonalEvent {
    /// Reads a sealed payload after its marker: the clear part, then the seal into ``sealed``.
    static func readSealedPayload(_ reader: inout ByteReader) throws(ByteReaderError) -> Self {
        let version = try reader.byte()
        guard version >= 1, version <= schemaVersion else {
            throw ByteReaderError(description: "\(typeName) schema version \(version) is not one this build reads")
        }
        var event = try Self(reading: &reader, version: version)
        event.sealed = Array(try reader.utf8())
        return event
    }
}

// MARK: - Personal fields in snapshots

/// How a snapshot holds the personal fields the projections keep in the clear (profiles, group names, activities,
/// gratitude): sealed afresh under their owner's key, so that a snapshot written before an erasure cannot be read
/// after it. The state digest takes them in the clear (the same state always gives the same digest).
enum SnapshotPersonal {
    /// In the clear: the digest, an owner without a key (their fields are empty once erased; a log older than
    /// sealing keeps them in the clear anyway).
    static let clear: UInt8 = 1
    /// Sealed under the owner's key.
    static let sealed: UInt8 = 2
    /// A seal that could not be made (no random bytes): the section does not decode, and the engine folds the log
    /// instead of trusting it.
    static let missing: UInt8 = 3
    /// The context of a snapshot's seals (no event type has this code).
    static let context: [UInt8] = [0xF0]
}

extension ByteWriter {
    /// Writes the personal fields `body` writes, belonging to `owner`: sealed under the owner's key when `keys` is
    /// given (a snapshot file) and the owner has one; else in the clear.
    mutating func personal(_ keys: PersonalKeys?, owner: String, _ body: (inout ByteWriter) -> Void) {
        var inner = ByteWriter(capacity: 64)
        body(&inner)
        defer { wipe(&inner.bytes) }
        guard let keys, let key = keys.key(of: UserID(owner)) else {
            byte(SnapshotPersonal.clear)
            writeLengthPrefixed(inner.bytes)
            return
        }
        guard let seal = try? PersonalSeal.seal(inner.bytes, with: key, context: SnapshotPersonal.context) else {
            byte(SnapshotPersonal.missing)
            return
        }
        byte(SnapshotPersonal.sealed)
        writeLengthPrefixed(seal)
    }
}

extension ByteReader {
    /// Reads what ``ByteWriter/personal(_:owner:_:)`` wrote and hands its plaintext to `body`; does nothing when it
    /// is sealed under a key that is gone (the owner was erased since: the fields stay empty).
    mutating func personal(
        _ keys: PersonalKeys?, owner: String, _ body: (inout ByteReader) throws(ByteReaderError) -> Void
    ) throws(ByteReaderError) {
        let tag = try byte()
        switch tag {
        case SnapshotPersonal.clear:
            let bytes = Array(try utf8())
            try ByteReader.reading(bytes, body)
        case SnapshotPersonal.sealed:
            let seal = Array(try utf8())
            guard let key = keys?.key(of: UserID(owner)) else { return }
            guard var plain = try? PersonalSeal.open(seal, with: key, context: SnapshotPersonal.context) else {
                throw ByteReaderError(description: "a sealed snapshot field of \(owner) does not open")
            }
            defer { wipe(&plain) }
            try ByteReader.reading(plain, body)
        default:
            throw ByteReaderError(description: "personal fields of \(owner) are missing from the snapshot (tag \(tag))")
        }
    }
}
