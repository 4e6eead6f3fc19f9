/// One Parley batch (docs/FORMAT.md, byte for byte) standing alone: what a replicated store publishes as one
/// message and what every reader checks when it reads one back.
package struct BatchMessage: Sendable {
    /// The whole batch: header and stored block.
    package var bytes: [UInt8]
    /// The first position and how many records it holds.
    package var firstPosition: UInt64
    package var count: Int
    /// The chain value after this batch.
    package var digest: [UInt8]
    /// The records, decoded (or as given to ``encode(_:previousDigest:)``).
    package var records: [Record]

    package var lastPosition: UInt64 { firstPosition + UInt64(count) - 1 }

    /// Encodes positioned records (dense from the first one's position, times and stream versions set) as one
    /// batch that follows the batch whose chain value is `previousDigest`.
    /// - Throws: `.recordTooLarge` or `.nameTooLong` when the block cannot be encoded.
    package static func encode(_ records: [Record], previousDigest: [UInt8]) throws(EventLogError) -> BatchMessage {
        precondition(!records.isEmpty, "a batch holds at least one record")
        let proposed = records.map {
            ProposedRecord(id: $0.id, stream: $0.stream, type: $0.type, actor: $0.actor, payload: $0.payload)
        }
        let staged: StagedRecords
        switch StagedRecords.stage(proposed) {
        case .success(let records): staged = records
        case .failure(let problem): throw problem
        }
        let pending = records.indices.map { number in
            PendingRecord(
                UnsafePointer(staged.records.baseAddress! + number), time: records[number].time,
                streamVersion: records[number].streamVersion.rawValue)
        }
        let encoder = BlockEncoder()
        let first = records[0].position.rawValue
        let encoded = withExtendedLifetime(staged) {
            pending.withUnsafeBufferPointer { pending in
                Result { () throws(EventLogError) in try encoder.encode(pending) }
            }
        }
        let batch = FinishedBatch(
            block: try encoded.get(), isLast: true, firstPosition: first, previous: previousDigest)
        return BatchMessage(
            bytes: batch.headerBytes + Array(batch.block.stored), firstPosition: first, count: records.count,
            digest: batch.header.digest, records: records)
    }

    /// Checks and decodes one batch read back: its header, CRC, that it starts at `expectedFirst`, that it
    /// chains onto `previousDigest`, that it ends an append group, and that its records decode.
    /// - Throws: `.corruptBatch` naming `source` and what is wrong.
    package static func decode(
        _ bytes: [UInt8], expectedFirst: UInt64, previousDigest: [UInt8], source: String
    ) throws(EventLogError) -> BatchMessage {
        func corrupt(_ what: String) -> EventLogError {
            EventLogError(.corruptBatch, "\(source) is not a valid Parley batch: \(what)")
        }
        let parsed = bytes.withUnsafeBytes { BatchHeader.parse($0, at: 0) }
        guard let header = parsed else { throw corrupt("its header is malformed (\(bytes.count) bytes)") }
        guard header.totalLength == bytes.count else {
            throw corrupt("its header says \(header.totalLength) bytes, the message has \(bytes.count)")
        }
        guard header.firstPosition == expectedFirst else {
            throw corrupt("it starts at position \(header.firstPosition), the next position is \(expectedFirst)")
        }
        guard !header.continues else { throw corrupt("it continues in another batch, which a message never does") }
        let block: [UInt8]
        switch bytes.withUnsafeBytes({ BatchDecoder.block(header: header, batch: $0) }) {
        case .success(let decoded): block = decoded
        case .failure(let problem): throw corrupt("\(problem) at position \(header.firstPosition)")
        }
        let chained = bytes.withUnsafeBytes { BatchHeader.chain(previous: previousDigest, batch: $0) }
        guard chained == header.digest else {
            throw corrupt("its chain digest does not follow the previous batch (at position \(header.firstPosition))")
        }
        guard let records = BatchDecoder.records(header: header, block: block) else {
            throw corrupt("its records do not decode (at position \(header.firstPosition))")
        }
        return BatchMessage(
            bytes: bytes, firstPosition: header.firstPosition, count: records.count, digest: header.digest,
            records: records)
    }

    /// The chain value before the first batch.
    package static var zeroDigest: [UInt8] { BatchFormat.zeroDigest }
}
