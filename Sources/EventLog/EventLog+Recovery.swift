#if canImport(Glibc)
    import Glibc
#endif

extension EventLog {
    /// Rebuilds the indexes by scanning every segment, checking each batch; cuts a torn tail; refuses
    /// (or, when asked, cuts) corruption before the tail.
    ///
    /// `cleanHead`: the head the state file recorded at a clean close, if it says so. Such a log's tail cannot
    /// be torn: damage at its end is then refused like damage anywhere else, never cut silently, and what a
    /// repair drops is counted up to that head.
    static func recover(
        directory: String, segmentNames: [String], configuration: Configuration, cleanHead: UInt64?,
        report: inout OpenReport
    ) throws(EventLogError) -> LogIndex {
        let wasClean = cleanHead != nil
        var index = LogIndex()
        var expected: UInt64 = 1
        var digest = BatchFormat.zeroDigest
        // Records of a multi-batch append group are indexed only once its last batch is seen.
        var groupRecords: [Record] = []
        var groupBatches: [BatchLocation] = []
        var groupStart: (offset: Int, expected: UInt64, digest: [UInt8])?

        for (number, name) in segmentNames.enumerated() {
            let path = directory + "/" + name
            let isLast = number == segmentNames.count - 1
            let file = try FileDescriptor.open(path, flags: O_RDWR)
            let bytes = try file.read(at: 0, count: file.size())
            let scanner = SegmentScanner(name: name, bytes: bytes)
            let segmentNumber = Int32(index.segments.count)
            var segmentUncompressed = 0
            let expectedAtStart = expected
            let result = try scanner.scan { header, block, offset in
                if header.firstPosition != expected {
                    return "position gap: expected \(expected), batch starts at \(header.firstPosition)"
                }
                let chained = bytes.withUnsafeBytes { raw in
                    BatchHeader.chain(
                        previous: digest,
                        batch: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + header.totalLength)]))
                }
                guard chained == header.digest else { return "hash chain mismatch" }
                guard let records = BatchDecoder.records(header: header, block: block) else {
                    return "records do not decode"
                }
                if groupStart == nil { groupStart = (offset, expected, digest) }
                digest = chained
                expected = header.lastPosition + 1
                groupRecords.append(contentsOf: records)
                groupBatches.append(
                    BatchLocation(
                        segment: segmentNumber, offset: Int64(offset), firstPosition: header.firstPosition,
                        count: header.count, totalLength: UInt32(header.totalLength),
                        uncompressedLength: header.uncompressedLength, minTime: header.minTime,
                        maxTime: header.maxTime))
                segmentUncompressed += Int(header.uncompressedLength)
                if !header.continues {
                    for record in groupRecords { index.index(record) }
                    index.batches.append(contentsOf: groupBatches)
                    groupRecords.removeAll(keepingCapacity: true)
                    groupBatches.removeAll(keepingCapacity: true)
                    groupStart = nil
                }
                return nil
            }
            index.uncompressedBytes += segmentUncompressed

            guard let firstPosition = result.headerFirstPosition else {
                if isLast && !result.hasValidDataAfterStop && !wasClean {
                    try FileSystem.remove(path)
                    try FileSystem.syncDirectory(directory)
                    report.notes.append("removed \(name): a segment whose creation the crash interrupted")
                    report.truncatedBytes += bytes.count
                    break
                }
                try corruption(
                    directory: directory, segmentNames: segmentNames, number: number, offset: 0,
                    position: expected, problem: "missing or damaged segment header", configuration: configuration,
                    cleanTail: isLast && !result.hasValidDataAfterStop, cleanHead: cleanHead, report: &report)
                break
            }
            if firstPosition == expectedAtStart, name != segmentFileName(firstPosition: firstPosition) {
                report.notes.append(
                    "segment \(name) is named for another position, but its header says it starts at position "
                        + "\(firstPosition): it is read by its header; rename it to "
                        + "\(segmentFileName(firstPosition: firstPosition))")
            }
            if firstPosition != expectedAtStart {
                throw EventLogError(
                    .corruptBatch,
                    "segment \(name) starts at position \(firstPosition) but the log before it ends at \(expected - 1): "
                        + "a segment is missing. Run `parley verify` for details.")
            }
            var length = result.goodEnd
            var isSealed = false
            if let stop = result.stop {
                if isLast && !result.hasValidDataAfterStop && !wasClean {
                    try file.truncate(to: stop.offset)
                    try file.syncData()
                    report.truncatedBytes += bytes.count - stop.offset
                    report.notes.append(
                        "truncated a torn tail of \(bytes.count - stop.offset) bytes in \(name) at offset \(stop.offset)"
                    )
                    length = stop.offset
                } else {
                    try corruption(
                        directory: directory, segmentNames: segmentNames, number: number, offset: stop.offset,
                        position: stop.expectedPosition, problem: stop.problem, configuration: configuration,
                        cleanTail: isLast && !result.hasValidDataAfterStop, cleanHead: cleanHead, report: &report)
                    length = stop.offset
                }
            } else if let footer = result.footer {
                guard footer.lastPosition == expected - 1, footer.digest == digest else {
                    throw EventLogError(
                        .corruptBatch,
                        "segment \(name) has a footer at offset \(footer.offset) that disagrees with its batches "
                            + "(footer ends at position \(footer.lastPosition), batches at \(expected - 1))")
                }
                isSealed = true
                length = footer.offset + BatchFormat.footerSize
            } else if !isLast {
                throw EventLogError(
                    .corruptBatch,
                    "segment \(name) ends at offset \(bytes.count) without a footer, yet later segments exist")
            }
            // A multi-batch append cut short by the crash: none of it was acknowledged, so drop all of it. After
            // a clean close there is no such append: an unfinished group then means damage.
            if let start = groupStart, !groupRecords.isEmpty, wasClean, !configuration.truncateAtCorruption {
                throw EventLogError(
                    .corruptBatch,
                    "segment \(name) is corrupt at byte offset \(start.offset) (position \(start.expected)): an append "
                        + "group there has no last batch, yet the log was closed cleanly. Run `parley verify` to list "
                        + "every problem; `parley repair --truncate-at-corruption` drops the group "
                        + "(\(groupRecords.count) records).")
            }
            if let start = groupStart, !groupRecords.isEmpty {
                try file.truncate(to: start.offset)
                try file.syncData()
                report.droppedRecords += UInt64(groupRecords.count)
                report.notes.append(
                    "dropped \(groupRecords.count) records of an append group whose last batch is missing "
                        + "(cut by a crash or a repair), in \(name) at offset "
                        + "\(start.offset)")
                for batch in groupBatches { index.uncompressedBytes -= Int(batch.uncompressedLength) }
                length = start.offset
                expected = start.expected
                digest = start.digest
                groupRecords.removeAll()
                groupBatches.removeAll()
                groupStart = nil
                isSealed = false
            }
            index.segments.append(
                SegmentState(firstPosition: firstPosition, path: path, file: file, length: length, isSealed: isSealed))
            if result.stop != nil { break }
        }
        index.committed = expected - 1
        index.committedDigest = digest
        return index
    }

    /// A cleanly closed log whose segments end elsewhere than its close recorded (`parley.state`): a segment is
    /// missing or was cut. The writer refuses to open it, and a reader to read it short.
    static func cleanCloseMismatch(directory: String, state: StateFile, committed: UInt64) -> EventLogError {
        EventLogError(
            .corruptBatch,
            "the log in \(directory) was closed cleanly at position \(state.head), but its segments end at position "
                + "\(committed)\(committed == state.head ? " with another digest" : ""): a segment is missing or was "
                + "cut (\(stateFileName) recorded the close). Restore it from a backup, or open with "
                + "`parley repair --truncate-at-corruption` to accept the shorter log.")
    }

    /// Handles a damaged batch before the tail: throws, or with `truncateAtCorruption` cuts the log there.
    private static func corruption(
        directory: String, segmentNames: [String], number: Int, offset: Int, position: UInt64, problem: String,
        configuration: Configuration, cleanTail: Bool = false, cleanHead: UInt64? = nil, report: inout OpenReport
    ) throws(EventLogError) {
        let name = segmentNames[number]
        var later = try recoverableRecords(
            directory: directory, segmentNames: segmentNames, number: number, offset: offset, position: position)
        if let cleanHead, cleanHead >= position { later = max(later, cleanHead - position + 1) }
        guard configuration.truncateAtCorruption else {
            throw EventLogError(
                .corruptBatch,
                "segment \(name) is corrupt at byte offset \(offset) (position \(position)): \(problem). "
                    + (cleanTail
                        ? "The log was closed cleanly, so this is damage, not a torn write. "
                        : "Valid data follows it, so this is damage, not a torn write. ")
                    + "Run `parley verify` to list every problem; `parley repair --truncate-at-corruption` drops "
                    + "everything from there (about \(later) records).")
        }
        let file = try FileDescriptor.open(directory + "/" + name, flags: O_RDWR)
        try file.truncate(to: max(offset, BatchFormat.segmentHeaderSize))
        try file.syncData()
        for laterName in segmentNames[(number + 1)...] {
            try FileSystem.remove(directory + "/" + laterName)
        }
        try FileSystem.syncDirectory(directory)
        report.droppedRecords += later
        report.notes.append(
            "truncated at corruption in \(name) at offset \(offset) (\(problem)): dropped \(later) records from "
                + "position \(position) on, and \(segmentNames.count - number - 1) later segment files")
    }

    /// The records a truncation at `offset` would drop: from `position` (the first one there) up to the last
    /// position that a batch with a good CRC, or a footer, at or after `offset` vouches for. The damaged batch's
    /// own records count too, though its header cannot be trusted to say how many.
    private static func recoverableRecords(
        directory: String, segmentNames: [String], number: Int, offset: Int, position: UInt64
    ) throws(EventLogError) -> UInt64 {
        let before = max(position, 1) - 1
        var last = before
        for (k, name) in segmentNames.enumerated() where k >= number {
            guard let bytes = try FileSystem.read(directory + "/" + name) else { continue }
            let scanner = SegmentScanner(name: name, bytes: bytes)
            var cursor = k == number ? offset : BatchFormat.segmentHeaderSize
            while cursor + BatchFormat.footerSize <= bytes.count {
                if case .success(let (header, _)) = scanner.checkBatch(at: cursor) {
                    last = max(last, header.lastPosition)
                    cursor += header.totalLength
                } else if let footer = scanner.parseFooter(at: cursor) {
                    last = max(last, footer.lastPosition)
                    cursor += BatchFormat.footerSize
                } else {
                    cursor += 1
                }
            }
        }
        return last - before
    }
}
