/// A log kept as the copy of a log written elsewhere — a replicated node's copy of its stream: batches already
/// positioned, chained and acknowledged by the stream are appended byte for byte, so the copy's segments,
/// indexes, checkpoint and snapshots are those of a local log, and its head digest is the stream's.
///
/// A copy takes appends from ``appendCopied(_:)`` only: its owner places new records against ``position(of:)``
/// and ``version(of:)`` (and its own records in flight), and appends their batch once the stream took it.
extension EventLog {
    /// The position of the record with id `id` in the copy, or nil.
    package func position(of id: EventID) -> UInt64? {
        state.withLock { $0.ids[id] }
    }

    /// The newest version of `stream` in the copy (0 when it has no records).
    package func version(of stream: StreamName) -> UInt64 {
        state.withLock { UInt64($0.streams[stream.rawValue]?.count ?? 0) }
    }

    /// How many batches the log holds (for a copy: the stream sequence of its newest batch).
    package var batchCount: Int { state.withLock { $0.batches.count } }

    /// The newest batch, header and block, as stored; nil for an empty log.
    /// - Throws: `.io` when it cannot be read.
    package func newestBatch() throws(EventLogError) -> [UInt8]? {
        let location = state.withLock { index -> (FileDescriptor, Int, Int)? in
            guard let batch = index.batches.last else { return nil }
            return (index.segments[Int(batch.segment)].file, Int(batch.offset), Int(batch.totalLength))
        }
        guard let (file, offset, length) = location else { return nil }
        return try file.read(at: offset, count: length)
    }

    /// Appends `batches`, checked already (``BatchMessage/decode(_:expectedFirst:previousDigest:source:)``) and
    /// following the log's head in order, byte for byte; their records are indexed and visible to readers when it
    /// returns. Under ``Durability/synced`` the segment is synced first.
    ///
    /// Blocks the calling thread (a write, perhaps a sync): async code calls it from a thread of its own.
    /// - Throws: `.corruptBatch` when a batch does not start at the next position or repeats an event id (nothing
    ///   is added then); `.readOnly`; `.closed` after an earlier failure; `.io` / `.noSpace` when the write fails,
    ///   after which the log takes no more appends until reopened.
    package func appendCopied(_ batches: [BatchMessage]) throws(EventLogError) {
        guard !batches.isEmpty else { return }
        if readOnly != nil { throw EventLogError(.readOnly, "the log at \(directory) is open read-only") }
        writer.encoding.lock()
        defer { writer.encoding.unlock() }
        try state.withLock { (index) throws(EventLogError) in
            if let failure = index.failure { throw failure }
            guard writer.nextAssigned == writer.nextPosition else {
                throw EventLogError(
                    .closed, "the log at \(directory) is a copy: it takes no appends but copied batches")
            }
            var next = writer.nextPosition
            for batch in batches {
                guard batch.firstPosition == next else {
                    throw EventLogError(
                        .corruptBatch,
                        "a copied batch starts at position \(batch.firstPosition); the copy at \(directory) "
                            + "goes on at \(next)")
                }
                next = batch.lastPosition + 1
            }
            var added: [Record] = []
            for record in batches.lazy.flatMap(\.records) {
                let existing = index.ids.lookupOrInsert(record.id, record.position.rawValue)
                let version =
                    existing == nil ? index.streams.append(record.position.rawValue, to: record.stream.rawValue) : 0
                if existing == nil { added.append(record) }
                guard existing == nil, version == record.streamVersion.rawValue else {
                    Self.remove(added, from: &index)
                    throw EventLogError(
                        .corruptBatch,
                        existing.map {
                            "copied record \(record.position) repeats the id of record \($0) (\(record.id))"
                        }
                            ?? "copied record \(record.position) is version \(record.streamVersion) of stream "
                            + "\(record.stream), which the copy at \(directory) has at version \(version)")
                }
                index.typeCounts[record.type, default: 0] += 1
            }
            writer.nextAssigned = next
        }
        do {
            try writeCopied(batches)
        } catch {
            state.withLock { index in
                if index.failure == nil {
                    index.failure = EventLogError(
                        .closed, "a write failed (\(error.message)); the log takes no more appends until reopened",
                        cause: error)
                }
            }
            throw error
        }
    }

    /// Takes `records` (just indexed, newest last) back out of the indexes.
    private static func remove(_ records: [Record], from index: inout LogIndex) {
        for record in records.reversed() {
            index.ids.remove(record.id)
            index.streams.removeLast(from: record.stream.rawValue)
            index.typeCounts[record.type, default: 1] -= 1
            if index.typeCounts[record.type] == 0 { index.typeCounts[record.type] = nil }
        }
    }

    /// Writes indexed batches at the tail (starting segments as they fill) and commits them. Holds `encoding`.
    private func writeCopied(_ batches: [BatchMessage]) throws(EventLogError) {
        var out: [UInt8] = []
        var locations: [BatchLocation] = []
        func flush() throws(EventLogError) {
            guard !out.isEmpty else { return }
            do {
                try writer.tailFile.write(out, at: writer.tailOffset)
            } catch {
                try? writer.tailFile.truncate(to: writer.tailOffset)
                throw error
            }
            state.publish(locations, segment: writer.tailSegment, length: writer.tailOffset + out.count)
            writer.tailOffset += out.count
            out.removeAll(keepingCapacity: true)
            locations.removeAll(keepingCapacity: true)
        }
        for batch in batches {
            guard let header = batch.bytes.withUnsafeBytes({ BatchHeader.parse($0, at: 0) }) else {
                throw EventLogError(.corruptBatch, "a copied batch at position \(batch.firstPosition) has no header")
            }
            let end = writer.tailOffset + out.count
            if end + batch.bytes.count > configuration.segmentSize && end > BatchFormat.segmentHeaderSize {
                try flush()
                try roll()
            }
            locations.append(
                BatchLocation(
                    segment: Int32(writer.tailSegment), offset: Int64(writer.tailOffset + out.count),
                    firstPosition: header.firstPosition, count: header.count, totalLength: UInt32(header.totalLength),
                    uncompressedLength: header.uncompressedLength, minTime: header.minTime, maxTime: header.maxTime))
            out.append(contentsOf: batch.bytes)
            writer.tailRecordCount += UInt64(header.count)
            writer.nextPosition += UInt64(header.count)
            writer.tailDigest = header.digest
        }
        try flush()
        if case .buffered = configuration.durability {
            // Committed now, synced on the syncer's interval.
            enqueueForSync([], lastPosition: writer.nextPosition - 1, digest: writer.tailDigest)
        } else {
            try syncTimed(writer.tailFile)
            commit(through: writer.nextPosition - 1, digest: writer.tailDigest)
        }
    }
}

extension EventLog {
    /// The committed head, its chain value, and how many batches hold it: where a copy goes on from.
    package var copyHead: (position: UInt64, digest: [UInt8], batches: Int) {
        let (position, digest) = committed.withLock { ($0.position, $0.digest) }
        return (position, digest, batchCount)
    }
}
