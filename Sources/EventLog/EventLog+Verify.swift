import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thing `verify` found wrong.
public struct VerificationProblem: Sendable, Hashable, CustomStringConvertible {
    /// The segment file's name.
    public var segment: String
    /// Byte offset in the segment.
    public var offset: Int
    /// The position the log expected there.
    public var position: UInt64
    /// What is wrong: `crcMismatch`, `decompressionFailed`, `hashChainMismatch`, `positionGap`, ...
    public var kind: String

    public var description: String { "\(segment) offset \(offset) (position \(position)): \(kind)" }

    package init(segment: String, offset: Int, position: UInt64, kind: String) {
        self.segment = segment
        self.offset = offset
        self.position = position
        self.kind = kind
    }
}

/// What ``EventLog/verify()`` found.
public struct VerificationReport: Sendable, Hashable {
    public var isOK: Bool { problems.isEmpty }
    /// Records in batches that passed every check.
    public var records: UInt64
    public var batches: Int
    public var segments: Int
    /// The chain value after the last good batch.
    public var headDigest: String
    public var problems: [VerificationProblem]

    package init(records: UInt64, batches: Int, segments: Int, headDigest: String, problems: [VerificationProblem]) {
        self.records = records
        self.batches = batches
        self.segments = segments
        self.headDigest = headDigest
        self.problems = problems
    }
}

extension EventLog {
    /// Checks every committed batch: bounds, CRC, decompression, record decoding, dense positions, the hash
    /// chain and segment footers. Reports every problem rather than stopping at the first.
    public func verify() throws(EventLogError) -> VerificationReport {
        let committed = committedPosition
        let segments = state.withLock { index in index.segments.map { ($0.path, $0.length) } }
        return try EventLog.verify(segments: segments, through: committed)
    }

    /// Verifies the log in `directory` without opening it for writing (works on a log too damaged to open).
    ///
    /// Beside what ``verify()`` checks, a log closed cleanly (and not held by a writer now) must end where its
    /// close recorded in `parley.state`, as the writer requires before it opens it: a segment missing at the end,
    /// or one cut at an append group's end, is reported (`endsBeforeCleanClose`, `cleanCloseMismatch`).
    /// - Throws: `.notALog` when the directory has no Parley state file.
    public static func verify(directory: String) throws(EventLogError) -> VerificationReport {
        guard FileSystem.exists(directory + "/" + stateFileName) else { throw missingStateError(directory: directory) }
        // Beside a live writer, check what it acknowledged: the batches after it may be half written. The head
        // is read before the sizes, so every batch up to it is whole in the sizes taken after.
        var through = UInt64.max
        let isHeld = isHeldByAnotherProcess(directory)
        if isHeld,
            let headFile = try? FileDescriptor.open(directory + "/" + HeadFile.name, flags: O_RDONLY),
            let head = HeadFile.read(headFile)
        {
            through = head.position
        }
        // A damaged state file is only a lost hint, as it is to the writer.
        let state = isHeld ? nil : (try? StateFile.read(directory + "/" + stateFileName)) ?? nil
        let names = try FileSystem.list(directory).filter { $0.hasSuffix(".seg") }
        var segments: [(String, Int)] = []
        for name in names {
            let path = directory + "/" + name
            segments.append((path, Int(FileSystem.fingerprint(path)?.size ?? 0)))
        }
        return try verify(segments: segments, through: through, cleanClose: state?.isClean == true ? state : nil)
    }

    /// Whether a writer holds the log in `directory` now (its `LOCK` is taken).
    static func isHeldByAnotherProcess(_ directory: String) -> Bool {
        guard let lock = try? FileDescriptor.open(directory + "/" + lockFileName, flags: O_RDONLY) else { return false }
        if lock.tryLock() {
            lock.unlock()
            return false
        }
        return true
    }

    /// Checks `segments` up to position `committed`; with `cleanClose`, also that they end at its head and digest.
    static func verify(
        segments: [(path: String, length: Int)], through committed: UInt64, cleanClose: StateFile? = nil
    ) throws(EventLogError) -> VerificationReport {
        var problems: [VerificationProblem] = []
        var expected: UInt64 = 1
        var digest = BatchFormat.zeroDigest
        var batches = 0
        var records: UInt64 = 0
        // After a damaged batch nothing ties the next good batch or footer to the chain: adopt its stored values.
        var resynchronised = false
        // An append group of several batches counts only once its last batch is there: where the open one began,
        // and the figures as of the last whole group.
        var openGroup: (segment: String, offset: Int, position: UInt64)?
        var whole = (records: UInt64(0), batches: 0, digest: BatchFormat.zeroDigest)
        var wholeEnd: UInt64 = 0
        for (number, segment) in segments.enumerated() {
            let name = String(segment.path.split(separator: "/").last ?? "")
            guard let all = try FileSystem.read(segment.path) else { continue }
            let bytes = Array(all.prefix(segment.length))
            let scanner = SegmentScanner(name: name, bytes: bytes)
            guard let first = try scanner.parseHeader() else {
                problems.append(
                    VerificationProblem(segment: name, offset: 0, position: expected, kind: "badSegmentHeader"))
                continue
            }
            // The name is the segment's first position (FORMAT.md): readers that look a segment up by name miss
            // one renamed.
            if name != segmentFileName(firstPosition: first) {
                problems.append(
                    VerificationProblem(segment: name, offset: 0, position: first, kind: "segmentNameMismatch"))
            }
            if first != expected {
                if !resynchronised {
                    problems.append(
                        VerificationProblem(segment: name, offset: 0, position: expected, kind: "positionGap"))
                }
                expected = first
            }
            var offset = BatchFormat.segmentHeaderSize
            var sealed = false
            while offset < bytes.count && expected <= committed {
                if let footer = scanner.parseFooter(at: offset) {
                    if resynchronised {
                        resynchronised = false
                        expected = footer.lastPosition + 1
                        digest = footer.digest
                    } else if footer.lastPosition != expected - 1 || footer.digest != digest {
                        problems.append(
                            VerificationProblem(
                                segment: name, offset: offset, position: expected, kind: "footerMismatch"))
                    }
                    sealed = true
                    if offset + BatchFormat.footerSize != bytes.count {
                        problems.append(
                            VerificationProblem(
                                segment: name, offset: offset + BatchFormat.footerSize, position: expected,
                                kind: "bytesAfterFooter"))
                    }
                    break
                }
                switch scanner.checkBatch(at: offset) {
                case .failure(let problem):
                    problems.append(
                        VerificationProblem(segment: name, offset: offset, position: expected, kind: problem.rawValue))
                    // Resynchronise on the next batch that checks out, so every later problem is reported too.
                    var next = offset + 1
                    var resumed = false
                    while next + BatchFormat.footerSize <= bytes.count {
                        if case .success = scanner.checkBatch(at: next) {
                            offset = next
                            resumed = true
                            break
                        }
                        if scanner.parseFooter(at: next) != nil {
                            offset = next
                            resumed = true
                            break
                        }
                        next += 1
                    }
                    if !resumed { offset = bytes.count }
                    resynchronised = true
                    continue
                case .success(let (header, block)):
                    if header.firstPosition > committed {
                        offset = bytes.count
                        continue
                    }
                    if header.firstPosition != expected && !resynchronised {
                        problems.append(
                            VerificationProblem(segment: name, offset: offset, position: expected, kind: "positionGap"))
                    }
                    let chained =
                        resynchronised
                        ? header.digest
                        : bytes.withUnsafeBytes { raw in
                            BatchHeader.chain(
                                previous: digest,
                                batch: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + header.totalLength)]))
                        }
                    resynchronised = false
                    if chained != header.digest {
                        problems.append(
                            VerificationProblem(
                                segment: name, offset: offset, position: header.firstPosition, kind: "hashChainMismatch"
                            ))
                    }
                    if BatchDecoder.records(header: header, block: block) == nil {
                        problems.append(
                            VerificationProblem(
                                segment: name, offset: offset, position: header.firstPosition,
                                kind: "recordDecodeFailed"))
                    } else {
                        records += UInt64(header.count)
                    }
                    digest = chained
                    batches += 1
                    expected = header.lastPosition + 1
                    if header.continues {
                        if openGroup == nil { openGroup = (name, offset, header.firstPosition) }
                    } else {
                        openGroup = nil
                        whole = (records, batches, digest)
                        wholeEnd = header.lastPosition
                    }
                    offset += header.totalLength
                }
            }
            if !sealed && number < segments.count - 1 && expected <= committed {
                problems.append(
                    VerificationProblem(segment: name, offset: bytes.count, position: expected, kind: "missingFooter"))
            }
        }
        if let openGroup {
            // Its end was never written: the append was not acknowledged, and the next open drops it.
            problems.append(
                VerificationProblem(
                    segment: openGroup.segment, offset: openGroup.offset, position: openGroup.position,
                    kind: "incompleteAppendGroup"))
            (records, batches, digest) = whole
        }
        if let cleanClose, wholeEnd != cleanClose.head || whole.digest != cleanClose.digest {
            let last = segments.last.map { (String($0.path.split(separator: "/").last ?? ""), $0.length) }
            problems.append(
                VerificationProblem(
                    segment: last?.0 ?? stateFileName, offset: last?.1 ?? 0,
                    position: wholeEnd < cleanClose.head ? wholeEnd + 1 : cleanClose.head,
                    kind: wholeEnd < cleanClose.head ? "endsBeforeCleanClose" : "cleanCloseMismatch"))
        }
        return VerificationReport(
            records: records, batches: batches, segments: segments.count, headDigest: digest.hexString,
            problems: problems)
    }
}
