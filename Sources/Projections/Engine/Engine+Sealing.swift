import EventLog

/// How commands and imports seal personal fields before their records are batched (docs/ERASURE.md).
extension Engine {
    /// `event` as the store keeps it (its personal fields sealed under their owner's key in `keys`) and as the fold
    /// takes it (a message stays sealed, since the chat holds its seal; every other event in the clear, since the
    /// projections hold those fields in the clear).
    /// The size limit of a record holds for the event in the clear too (`recordTooLarge`): the text code may shrink
    /// what is sealed, but what a record may say does not depend on it.
    /// - Throws: `.userErased` when the owner was erased; `.recordTooLarge` for an event over the limit in the clear;
    ///   `.storage` when the key store fails or no seal can be made.
    /// `presealed` is the event already sealed (``presealedFields(_:owner:)``), when it was.
    static func seal(
        _ event: DomainEvent, record: ProposedRecord, in state: borrowing ProjectionState, keys: any KeyStore,
        presealed: DomainEvent? = nil
    ) throws(ValidationError) -> (stored: [UInt8], folded: DomainEvent) {
        let (stored, folded) = try sealed(event, actor: record.actor, in: state, keys: keys, presealed: presealed)
        // The text code takes at least 3 bits a byte: a stored payload under a third of the limit cannot hold more
        // than the limit in the clear, and needs no second encoding to tell.
        if stored.count * 3 + 1024 >= EventLog.maximumRecordSize {
            var clear = record
            clear.payload = event.storedPayload()
            if let problem = EventLog.checkRecord(clear) { throw ValidationError(refused: problem, clear) }
        }
        return (stored, folded)
    }

    private static func sealed(
        _ event: DomainEvent, actor: String, in state: borrowing ProjectionState, keys: any KeyStore,
        presealed: DomainEvent?
    ) throws(ValidationError) -> (stored: [UInt8], folded: DomainEvent) {
        if let presealed, presealed.isSealed {
            switch event {
            case .messageSent, .messageEdited: return (presealed.storedPayload(), presealed)
            default: return (presealed.storedPayload(), event)
            }
        }
        guard let personal = event.personal, personal.sealed == nil else { return (event.storedPayload(), event) }
        let owner = personal.personalOwner(in: state) ?? UserID(actor)
        let sealed: DomainEvent
        do {
            sealed = try event.sealing(in: keys, owner: owner, creating: true)
        } catch  where error.code == .keyErased {
            throw ValidationError(.userErased, "user \(owner.rawValue) was erased: nothing more is written for them")
        } catch {
            throw ValidationError(storage: error, doing: "sealing the personal fields of a \(event.typeName)")
        }
        switch event {
        case .messageSent, .messageEdited: return (sealed.storedPayload(), sealed)
        default: return (sealed.storedPayload(), event)
        }
    }

    /// The seal of `event`'s personal fields under `owner`'s key, made before the sequencer so that both cores
    /// share the work (a seal depends on the fields and the key, not on the ids the sequencer may choose); nil when
    /// the owner has no key yet (the seal is then made under the sequencer).
    func presealedFields<E: PersonalEvent>(_ event: E, owner: UserID) -> [UInt8]? {
        guard let key = PersonalKeys(store.keys).key(of: owner) else { return nil }
        return try? event.sealing(with: key).sealed
    }

    /// Makes (durably, with one sync) the keys that the personal events of `events` will be sealed under, so that
    /// sealing them under the sequencer never waits for a disk. Owners erased, or named only through the state,
    /// are left to the sealing itself.
    /// Blocks the calling thread (a key store write and sync).
    static func prepareKeys(for events: [EventEnvelope], in keys: any KeyStore) throws(ValidationError) {
        var owners: [KeyOwner] = []
        var seen: Set<KeyOwner> = []
        for envelope in events {
            guard let personal = envelope.event.personal,
                let id = personal.payloadActor ?? envelope.actor
            else { continue }
            let owner = KeyOwner(id)
            guard !owner.bytes.isEmpty, owner.bytes.count <= KeyOwner.maximumByteCount, seen.insert(owner).inserted,
                (try? keys.lookup(owner)) == .absent
            else { continue }
            owners.append(owner)
        }
        guard !owners.isEmpty else { return }
        do {
            _ = try keys.createKeys(for: owners)
        } catch {
            throw ValidationError(storage: error, doing: "making the data keys of \(owners.count) users")
        }
    }

    /// What a record says, with its seal opened with `keys` (the record's actor owns it when its payload names no
    /// owner): the payload in the clear, to compare with an event given again under the same id. A record whose
    /// owner was erased keeps its sealed payload (and so never equals an event given again), and says so.
    static func plainPayload(of record: Record, keys: any KeyStore) -> (payload: [UInt8], isErased: Bool) {
        guard record.payload.first == sealedPayloadMarker,
            let event = try? DomainEvent.decode(type: record.type, payload: record.payload)
        else { return (record.payload, false) }
        let opened = event.opened(with: PersonalKeys(keys), owner: UserID(record.actor))
        return opened.isSealed ? (record.payload, true) : (opened.storedPayload(), false)
    }

    /// After the key store failed to write or sync (a full disk, an I/O error), the engine takes no commands until
    /// ``recoverStore()`` reopens the store, and the key store with it (which then takes writes again): the same as
    /// for the log's own failures. Other errors (an erased owner) change nothing.
    func noteKeyStoreFailure(_ error: ValidationError) {
        guard error.code == .storage, let cause = error.storageError,
            [.io, .noSpace, .closed].contains(cause.code)
        else { return }
        pipeline.withLock { pipeline in
            guard pipeline.failure == nil else { return }
            var failure = ValidationError(
                .storage,
                "the key store failed (\(cause.message)); the engine takes no commands until it is reopened")
            failure.storageError = cause
            pipeline.failure = failure
        }
    }
}
