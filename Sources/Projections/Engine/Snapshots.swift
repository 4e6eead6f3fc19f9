import EventLog

/// Snapshots: all projection state at a position, kept by the store (the local log keeps each in a file
/// `snapshot-<20-digit position>.bin` in its data directory, written durably).
///
/// Bytes:
/// ```
/// magic "PRLYSNAP" (8) · format version UInt32 LE · position UInt64 LE · event id at that position (16)
/// · state length UInt64 LE · checksum of the state UInt64 LE (`WordChecksum`) · state bytes
/// (`ProjectionState.encodedState`)
/// ```
/// On open, a snapshot that is damaged, of another version, ahead of the log, or whose event id disagrees with
/// the log is ignored.
enum Snapshots {
    static let magic: [UInt8] = Array("PRLYSNAP".utf8)
    /// How many snapshots are kept after a new one is written.
    static let kept = 2
    static func encode(_ state: ProjectionState, eventID: EventID) -> [UInt8] {
        let body = state.encodedState()
        var writer = ByteWriter(capacity: body.count + 64)
        writer.bytes.append(contentsOf: magic)
        writer.fixed32(ProjectionState.snapshotFormatVersion)
        writer.fixed64(state.position)
        writer.bytes.append(contentsOf: eventID.bytes)
        writer.fixed64(UInt64(body.count))
        writer.fixed64(WordChecksum.hash(body[...]))
        writer.bytes.append(contentsOf: body)
        return writer.bytes
    }

    /// Decodes a snapshot file's bytes; throws a description of why it cannot be trusted.
    static func decode(_ bytes: UnsafeRawBufferPointer, store: any EventStore) throws(ByteReaderError)
        -> ProjectionState
    {
        let header = 8 + 4 + 8 + 16 + 8 + 8
        guard bytes.count >= header, Array(bytes[0..<8]) == magic else {
            throw ByteReaderError(description: "not a snapshot file")
        }
        let (version, position, id, length, checksum) = try ByteReader.reading(Array(bytes[8..<header])) {
            (r: inout ByteReader) throws(ByteReaderError) in
            let version = try r.fixed32()
            let position = try r.fixed64()
            var idBytes: [UInt8] = []
            for _ in 0..<16 { idBytes.append(try r.byte()) }
            return (version, position, idBytes, try r.fixed64(), try r.fixed64())
        }
        guard version == ProjectionState.snapshotFormatVersion else {
            throw ByteReaderError(
                description:
                    "snapshot format version \(version), this build reads \(ProjectionState.snapshotFormatVersion)")
        }
        guard position <= store.head.rawValue else {
            throw ByteReaderError(description: "snapshot at \(position) is ahead of the log head \(store.head)")
        }
        guard UInt64(bytes.count - header) == length else {
            throw ByteReaderError(description: "snapshot is truncated")
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[header...])
        guard WordChecksum.hash(body) == checksum else {
            throw ByteReaderError(description: "snapshot checksum mismatch")
        }
        if position > 0 {
            let record: Record?
            do throws(EventLogError) {
                record = try store.records(at: [Position(position)]).first
            } catch {
                throw ByteReaderError(description: "cannot read position \(position) of the log: \(error.message)")
            }
            guard let record, record.id.bytes == id else {
                throw ByteReaderError(description: "the log's event at \(position) is not the one the snapshot saw")
            }
        }
        let state = try ProjectionState(encodedState: body)
        guard state.position == position else { throw ByteReaderError(description: "snapshot position disagrees") }
        return state
    }

    /// The newest snapshot that can be trusted, or nil; `ignored` collects why others were skipped.
    static func loadNewest(store: any EventStore, ignored: inout [String]) -> ProjectionState? {
        for position in store.snapshotPositions() {
            let bytes: [UInt8]?
            do throws(EventLogError) {
                bytes = try store.readSnapshot(at: position)
            } catch {
                ignored.append("snapshot at \(position): unreadable: \(error.message)")
                continue
            }
            guard let bytes else {
                ignored.append("snapshot at \(position): removed while the engine opened")
                continue
            }
            let decoded: Result<ProjectionState, ByteReaderError> = bytes.withUnsafeBytes { raw in
                Result { () throws(ByteReaderError) in try decode(raw, store: store) }
            }
            switch decoded {
            case .success(let state): return state
            case .failure(let error): ignored.append("snapshot at \(position): \(error.description)")
            }
        }
        return nil
    }
}

extension Engine {
    /// Stores a snapshot of all durable projection state at the current position with the store (keeping the
    /// newest two). Returns the snapshot's position. Waits for a snapshot being written in the background.
    /// - Throws: ``ValidationError/Code/storage`` (with the store's error) when it cannot be written durably.
    @discardableResult
    public func writeSnapshot() throws(ValidationError) -> Position {
        try snapshots.writing.withLock { _ throws(ValidationError) -> Position in
            let (bytes, position) = try encodeSnapshot()
            do throws(EventLogError) {
                try store.writeSnapshot(bytes, at: Position(position), keep: Snapshots.kept)
            } catch {
                throw ValidationError(storage: error, doing: "writing the snapshot at \(position)")
            }
            snapshots.wrote(position)
            return Position(position)
        }
    }

    /// The snapshot bytes of the durable state and their position. The copy of the state it encodes is gone when
    /// it returns; while it lives, folds stay off the store's thread (see ``SnapshotSchedule``).
    private func encodeSnapshot() throws(ValidationError) -> (bytes: [UInt8], position: UInt64) {
        snapshots.holdsCopy.store(true, ordering: .releasing)
        defer { snapshots.holdsCopy.store(false, ordering: .releasing) }
        let copy = query { (s: borrowing ProjectionState) -> ProjectionState in copy s }
        var id = EventID(high: 0, low: 0)
        if copy.position > 0 {
            let record: Record?
            do throws(EventLogError) {
                record = try store.records(at: [Position(copy.position)]).first
            } catch {
                throw ValidationError(storage: error, doing: "reading position \(copy.position)")
            }
            guard let record else { throw ValidationError(.storage, "the log has no record at \(copy.position)") }
            id = record.id
        }
        return (Snapshots.encode(copy, eventID: id), copy.position)
    }

    /// Queues a snapshot on the background queue when the policy says one is due; returns at once.
    func snapshotIfDue() {
        let position = durablePosition.load(ordering: .acquiring)
        snapshots.scheduleIfDue(at: position) { [self] in
            do throws(ValidationError) {
                try writeSnapshot()
            } catch {
                snapshots.failed(at: position, error)
            }
        }
    }

    /// On close: writes a snapshot of everything acknowledged when the policy asks for one and enough was folded
    /// since the newest; a failure is a note.
    func writeSnapshotOnClose() {
        guard let minimum = snapshots.policy.onCloseAfterEvents else { return }
        waitUntilDurable(sequencer.withLock { $0.position })
        guard pipeline.withLock({ $0.failure == nil }) else { return }
        let position = durablePosition.load(ordering: .acquiring)
        guard position > 0, position >= snapshots.newest + minimum else { return }
        do throws(ValidationError) {
            try writeSnapshot()
        } catch {
            snapshots.note(error, doing: "on close")
        }
    }
}
