import EventLog

/// Snapshots: all projection state at a position, kept by the store (the local log keeps each in a file
/// `snapshot-<20-digit position>.bin` in its data directory, written durably).
///
/// Bytes:
/// ```
/// magic "PRLYSNAP" (8) · format version UInt32 LE · position UInt64 LE · event id at that position (16)
/// · part count UInt32 LE · per part: length UInt64 LE, checksum UInt64 LE (`WordChecksum`)
/// · checksum of all the bytes before it UInt64 LE · the parts, in order
/// ```
/// The parts are the ``SnapshotPart``s of ``ProjectionState/encodedState()``: together, exactly its bytes. Each
/// has its own checksum, so one projection's section can be read and checked without the rest.
///
/// On open, a snapshot that is damaged, of another version, ahead of the log, or whose event id disagrees with
/// the log is ignored.
enum Snapshots {
    static let magic: [UInt8] = Array("PRLYSNAP".utf8)
    /// How many snapshots are kept after a new one is written.
    static let kept = 2
    /// The bytes before the part table.
    static let fixedHeader = 8 + 4 + 8 + 16 + 4

    /// The snapshot file of `state`: its personal fields held in the clear are sealed under their owners' keys.
    static func encode(_ state: ProjectionState, eventID: EventID) -> [UInt8] {
        let (body, ends) = state.encodedParts(sealing: true)
        var writer = ByteWriter(capacity: body.count + fixedHeader + 16 * ends.count + 8)
        writer.bytes.append(contentsOf: magic)
        writer.fixed32(ProjectionState.snapshotFormatVersion)
        writer.fixed64(state.position)
        writer.bytes.append(contentsOf: eventID.bytes)
        writer.fixed32(UInt32(ends.count))
        body.withUnsafeBytes { raw in
            var start = 0
            for end in ends {
                writer.fixed64(UInt64(end - start))
                writer.fixed64(WordChecksum.hash(UnsafeRawBufferPointer(rebasing: raw[start..<end])))
                start = end
            }
        }
        writer.fixed64(WordChecksum.hash(writer.bytes[...]))
        writer.bytes.append(contentsOf: body)
        return writer.bytes
    }

    /// A snapshot's header, read and checked: where each part lies in the file and its checksum.
    struct Header: Sendable {
        var position: UInt64
        /// Each part's offset in the file, its length and its checksum, by ``SnapshotPart`` order.
        var parts: [(offset: Int, length: Int, checksum: UInt64)]
        /// Where the parts begin.
        var size: Int

        /// Reads and checks the header of `file` against `store`: version, checksum, sizes, and that the log
        /// holds at the snapshot's position the event the snapshot saw.
        init(_ file: any SnapshotFile, store: any EventStore) throws(ByteReaderError) {
            let partCount = SnapshotPart.allCases.count
            size = fixedHeader + 16 * partCount + 8
            guard file.size >= fixedHeader else { throw ByteReaderError(description: "not a snapshot file") }
            let bytes = try Snapshots.read(file, at: 0, count: min(size, file.size))
            guard Array(bytes[0..<8]) == magic else { throw ByteReaderError(description: "not a snapshot file") }
            let version = try ByteReader.reading(bytes[8..<12]) { (r: inout ByteReader) throws(ByteReaderError) in
                try r.fixed32()
            }
            guard version == ProjectionState.snapshotFormatVersion else {
                throw ByteReaderError(
                    description:
                        "snapshot format version \(version), this build reads \(ProjectionState.snapshotFormatVersion)")
            }
            guard bytes.count == size else { throw ByteReaderError(description: "snapshot is truncated") }
            var offset = size
            var parts: [(offset: Int, length: Int, checksum: UInt64)] = []
            let (position, id, count, checksum) = try ByteReader.reading(bytes[12...]) {
                (r: inout ByteReader) throws(ByteReaderError) in
                let position = try r.fixed64()
                var id: [UInt8] = []
                for _ in 0..<16 { id.append(try r.byte()) }
                let count = try r.fixed32()
                for _ in 0..<partCount {
                    let length = try r.fixed64()
                    guard length <= UInt64(Int.max - offset) else {
                        throw ByteReaderError(description: "snapshot part length \(length) is impossible")
                    }
                    parts.append((offset, Int(length), try r.fixed64()))
                    offset += Int(length)
                }
                return (position, id, count, try r.fixed64())
            }
            guard count == partCount else {
                throw ByteReaderError(description: "snapshot has \(count) parts, this build reads \(partCount)")
            }
            guard WordChecksum.hash(bytes[..<(size - 8)]) == checksum else {
                throw ByteReaderError(description: "snapshot header checksum mismatch")
            }
            guard offset == file.size else { throw ByteReaderError(description: "snapshot is truncated") }
            guard position <= store.head.rawValue else {
                throw ByteReaderError(description: "snapshot at \(position) is ahead of the log head \(store.head)")
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
            self.position = position
            self.parts = parts
        }

        /// Decodes the whole state: every part, each checked against its checksum.
        func decodeAll(_ file: any SnapshotFile, keys: PersonalKeys) throws(ByteReaderError) -> ProjectionState {
            let body = try Snapshots.read(file, at: size, count: file.size - size)
            let decoded: Result<ProjectionState, ByteReaderError> = body.withUnsafeBytes { raw in
                Result { () throws(ByteReaderError) in
                    for (part, range) in zip(SnapshotPart.allCases, parts) {
                        let bytes = UnsafeRawBufferPointer(rebasing: raw[(range.offset - size)...].prefix(range.length))
                        guard WordChecksum.hash(bytes) == range.checksum else { throw mismatch(part) }
                    }
                    return try ProjectionState(encodedState: raw, keys: keys)
                }
            }
            let state = try decoded.get()
            guard state.position == position else { throw ByteReaderError(description: "snapshot position disagrees") }
            return state
        }

        /// Decodes `parts` into `state`, each checked against its checksum.
        func decode(_ parts: [SnapshotPart], from file: any SnapshotFile, into state: inout ProjectionState)
            throws(ByteReaderError)
        {
            for part in parts {
                let range = self.parts[part.rawValue]
                let bytes = try Snapshots.read(file, at: range.offset, count: range.length)
                guard WordChecksum.hash(bytes[...]) == range.checksum else { throw mismatch(part) }
                try ByteReader.reading(bytes) { (r: inout ByteReader) throws(ByteReaderError) in
                    try state.read(part, from: &r)
                    guard r.isAtEnd else {
                        throw ByteReaderError(description: "trailing bytes after snapshot part \(part)")
                    }
                }
            }
        }

        private func mismatch(_ part: SnapshotPart) -> ByteReaderError {
            ByteReaderError(description: "snapshot checksum mismatch in part \(part)")
        }
    }

    static func read(_ file: any SnapshotFile, at offset: Int, count: Int) throws(ByteReaderError) -> [UInt8] {
        do throws(EventLogError) {
            return try file.read(at: offset, count: count)
        } catch {
            throw ByteReaderError(description: "unreadable: \(error.message)")
        }
    }

    /// A snapshot loaded with only its users' ids decoded, and what it takes to decode the rest.
    struct Sections: Sendable {
        let file: any SnapshotFile
        let header: Header
        /// The sections not decoded yet.
        var missing: ProjectionSections

        /// Decodes `sections` into a copy of `base` (the state the users' ids were decoded into).
        func decode(_ sections: ProjectionSections, base: ProjectionState) throws(ByteReaderError) -> ProjectionState {
            var state = base
            try header.decode(sections.parts, from: file, into: &state)
            try state.checkSizes(of: sections)
            return state
        }
    }

    /// The newest snapshot that can be trusted, decoded, or nil; `ignored` collects why others were skipped.
    /// With `lazily`, a snapshot at the store's head is returned with only the users' ids decoded, and the
    /// sections left to decode.
    static func loadNewest(store: any EventStore, lazily: Bool, ignored: inout [String]) -> (
        state: ProjectionState, sections: Sections?
    )? {
        for position in store.snapshotPositions() {
            let file: (any SnapshotFile)?
            do throws(EventLogError) {
                file = try store.openSnapshot(at: position)
            } catch {
                ignored.append("snapshot at \(position): unreadable: \(error.message)")
                continue
            }
            guard let file else {
                ignored.append("snapshot at \(position): removed while the engine opened")
                continue
            }
            do throws(ByteReaderError) {
                let header = try Header(file, store: store)
                guard lazily, header.position == store.head.rawValue else {
                    return (try header.decodeAll(file, keys: PersonalKeys(store.keys)), nil)
                }
                var state = ProjectionState(keys: PersonalKeys(store.keys))
                try header.decode(SnapshotPart.base, from: file, into: &state)
                guard state.position == header.position else {
                    throw ByteReaderError(description: "snapshot position disagrees")
                }
                return (state, Sections(file: file, header: header, missing: .all))
            } catch {
                ignored.append("snapshot at \(position): \(error.description)")
            }
        }
        return nil
    }
}

extension Engine {
    /// Decodes the sections in `needed` that the snapshot the engine opened on still holds undecoded (see
    /// ``Options/loadsSectionsLazily``); returns at once when they are decoded. A section that cannot be read
    /// or fails its checksum is noted, and the whole log is folded instead, as a replay.
    ///
    /// When the log cannot be folded either, the sections stay undecoded and the failure is kept in
    /// `sectionFailure` (commands are refused with it, so a server's readiness check fails) until a later call
    /// succeeds: the sections decoded before still answer their queries.
    /// - Throws: ``ValidationError/Code/storage`` naming the snapshot and why neither way worked.
    func load(_ needed: ProjectionSections) throws(ValidationError) {
        guard missingSections.load(ordering: .acquiring) & needed.rawValue != 0 else { return }
        try lazySections.withLock { (lazy: inout Snapshots.Sections?) throws(ValidationError) in
            guard var sections = lazy else { return }
            let wanted = sections.missing.intersection(needed)
            guard !wanted.isEmpty else { return }
            let base = durable.read { (s: borrowing ProjectionState) -> ProjectionState in
                var base = ProjectionState(keys: s.keys)
                base.position = s.position
                base.users = s.users
                return base
            }
            do throws(ByteReaderError) {
                let decoded = try sections.decode(wanted, base: base)
                durable.write { $0.install(wanted, from: decoded) }
                sequencer.withLock { $0.install(wanted, from: decoded) }
                sections.missing.subtract(wanted)
            } catch {
                let position = sections.header.position
                var fresh = ProjectionState(keys: PersonalKeys(store.keys))
                do throws(ValidationError) {
                    try Engine.fold(store: store, into: &fresh)
                } catch let failure {
                    var refusal = ValidationError(
                        .storage,
                        "the snapshot at \(position) could not be read (\(error.description)), and the log could "
                            + "not be folded instead (\(failure.message)): what needs that part of the state fails "
                            + "until one of them can be read")
                    refusal.storageError = failure.storageError
                    sectionFailure.withLock { $0 = refusal }
                    throw refusal
                }
                snapshots.note(
                    "the snapshot at \(position) could not be read (\(error.description)): the whole log was folded "
                        + "instead", key: "lazy section")
                sequencer.withLock { $0 = fresh }
                durable.write { $0 = fresh }
                durablePosition.store(fresh.position, ordering: .releasing)
                sections.missing = []
            }
            sectionFailure.withLock { $0 = nil }
            missingSections.store(sections.missing.rawValue, ordering: .releasing)
            lazy = sections.missing.isEmpty ? nil : sections
        }
    }

    /// Stores a snapshot of all durable projection state at the current position with the store (keeping the
    /// newest two). Returns the snapshot's position. Waits for a snapshot being written in the background.
    /// - Throws: ``ValidationError/Code/storage`` (with the store's error) when it cannot be written durably.
    @discardableResult
    public func writeSnapshot() throws(ValidationError) -> Position {
        try snapshots.writing.withLock { _ throws(ValidationError) -> Position in
            let (bytes, position) = try encodeSnapshot()
            // Encoding copied the whole state (hundreds of MB for the simulated week) and freed it.
            defer { releaseFreedMemory() }
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
        let copy = try query { (s: borrowing ProjectionState) -> ProjectionState in copy s }
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

    /// On close: writes a snapshot of everything acknowledged (or, following another node's writes, folded) when
    /// the policy asks for one and enough was folded since the newest; a failure is a note.
    func writeSnapshotOnClose() {
        guard let minimum = snapshots.policy.onCloseAfterEvents else { return }
        waitUntilDurable(sequencer.withLock { $0.position })
        // A follower's pipeline holds the refusal of commands, not a failure of what it folded.
        guard pipeline.withLock({ $0.failure == nil }) || isFollowing else { return }
        let position = durablePosition.load(ordering: .acquiring)
        guard position > 0, position >= snapshots.newest + minimum else { return }
        do throws(ValidationError) {
            try writeSnapshot()
        } catch {
            snapshots.note(error, doing: "on close")
        }
    }
}
