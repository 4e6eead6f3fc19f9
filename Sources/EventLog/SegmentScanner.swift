/// Reads one segment file from start to end, checking every batch: the engine of recovery and verify.
struct SegmentScanner {
    struct Footer: Equatable {
        var offset: Int
        var count: UInt64
        var lastPosition: UInt64
        var digest: [UInt8]
    }

    /// Why the scan stopped early, and where.
    struct Stop {
        var offset: Int
        var problem: String
        var expectedPosition: UInt64
    }

    struct Result {
        var headerFirstPosition: UInt64?
        var footer: Footer?
        var stop: Stop?
        /// End offset of the last good batch (or of the header).
        var goodEnd: Int
        /// Whether any checkable batch or footer lies after `stop`: corruption rather than a torn tail.
        var hasValidDataAfterStop = false
    }

    let name: String
    let bytes: [UInt8]

    static func segmentHeader(firstPosition: UInt64, createdAt: Int64) -> [UInt8] {
        var writer = BinaryWriter(capacity: BatchFormat.segmentHeaderSize)
        writer.write(bytes: BatchFormat.segmentMagic)
        writer.writeUInt16(UInt16(BatchFormat.version))
        writer.writeUInt16(0)
        var tail = BinaryWriter(capacity: 16)
        tail.writeUInt64(firstPosition)
        tail.writeUInt64(UInt64(bitPattern: createdAt))
        writer.writeUInt32(CRC32C.checksum(tail.bytes))
        writer.write(bytes: tail.bytes)
        return writer.bytes
    }

    static func footer(count: UInt64, lastPosition: UInt64, digest: [UInt8]) -> [UInt8] {
        var body = BinaryWriter(capacity: 48)
        body.writeUInt64(count)
        body.writeUInt64(lastPosition)
        body.write(bytes: digest)
        var writer = BinaryWriter(capacity: BatchFormat.footerSize)
        writer.writeUInt32(BatchFormat.footerMagic)
        writer.writeUInt32(CRC32C.checksum(body.bytes))
        writer.write(bytes: body.bytes)
        return writer.bytes
    }

    /// Parses the segment header; nil when it is missing or damaged. Throws on a foreign format version.
    func parseHeader() throws(EventLogError) -> UInt64? {
        guard bytes.count >= BatchFormat.segmentHeaderSize,
            Array(bytes[0..<8]) == BatchFormat.segmentMagic
        else { return nil }
        var reader = BinaryReader(bytes, offset: 8)
        guard let version = try? reader.readUInt16(), (try? reader.readUInt16()) != nil,
            let crc = try? reader.readUInt32()
        else { return nil }
        guard crc == CRC32C.checksum(Array(bytes[16..<32])) else { return nil }
        guard version == BatchFormat.version else {
            throw EventLogError(
                .versionMismatch,
                "segment \(name) has format version \(version); this build reads version \(BatchFormat.version)")
        }
        return try? reader.readUInt64()
    }

    func parseFooter(at offset: Int) -> Footer? {
        guard bytes.count - offset >= BatchFormat.footerSize else { return nil }
        var reader = BinaryReader(bytes, offset: offset)
        guard (try? reader.readUInt32()) == BatchFormat.footerMagic, let crc = try? reader.readUInt32(),
            crc == CRC32C.checksum(Array(bytes[(offset + 8)..<(offset + BatchFormat.footerSize)])),
            let count = try? reader.readUInt64(), let last = try? reader.readUInt64(),
            let digest = try? reader.readBytes(32)
        else { return nil }
        return Footer(offset: offset, count: count, lastPosition: last, digest: digest)
    }

    /// Checks the batch at `offset`: header, bounds and CRC (and, when `decode`, the block).
    func checkBatch(at offset: Int) -> Swift.Result<(BatchHeader, [UInt8]), BatchProblem> {
        bytes.withUnsafeBytes { raw in
            guard raw.count - offset >= BatchFormat.headerSize else { return .failure(.truncated) }
            guard raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self) == BatchFormat.batchMagic.littleEndian
            else { return .failure(.badMagic) }
            guard let header = BatchHeader.parse(raw, at: offset), header.version == BatchFormat.version else {
                return .failure(.badHeader)
            }
            guard raw.count - offset >= header.totalLength else { return .failure(.truncated) }
            let batch = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + header.totalLength)])
            return BatchDecoder.block(header: header, batch: batch).map { (header, $0) }
        }
    }

    /// Whether a batch with a good CRC, or a good footer, starts anywhere after `offset`.
    func hasValidData(after offset: Int) -> Bool {
        var candidate = offset + 1
        let magic0 = UInt8(truncatingIfNeeded: BatchFormat.batchMagic)
        let footer0 = UInt8(truncatingIfNeeded: BatchFormat.footerMagic)
        while candidate + 8 <= bytes.count {
            let byte = bytes[candidate]
            if byte == magic0 || byte == footer0 {
                if case .success = checkBatch(at: candidate) { return true }
                if parseFooter(at: candidate) != nil { return true }
            }
            candidate += 1
        }
        return false
    }

    /// Walks the batches in order, handing each good one (header, uncompressed block, offset) to `visit`;
    /// `visit` returns a problem to stop at that batch (a position gap, a chain mismatch).
    func scan(visit: (BatchHeader, [UInt8], Int) -> String?) throws(EventLogError) -> Result {
        guard let first = try parseHeader() else {
            return Result(
                headerFirstPosition: nil, footer: nil,
                stop: Stop(offset: 0, problem: "missing or damaged segment header", expectedPosition: 0), goodEnd: 0,
                hasValidDataAfterStop: hasValidData(after: 0))
        }
        var result = Result(headerFirstPosition: first, footer: nil, stop: nil, goodEnd: BatchFormat.segmentHeaderSize)
        var offset = BatchFormat.segmentHeaderSize
        var expected = first
        while offset < bytes.count {
            if let footer = parseFooter(at: offset) {
                result.footer = footer
                if offset + BatchFormat.footerSize != bytes.count {
                    result.stop = Stop(
                        offset: offset + BatchFormat.footerSize, problem: "bytes after the segment footer",
                        expectedPosition: expected)
                }
                return result
            }
            switch checkBatch(at: offset) {
            case .failure(let problem):
                result.stop = Stop(offset: offset, problem: problem.rawValue, expectedPosition: expected)
                result.hasValidDataAfterStop = hasValidData(after: offset)
                return result
            case .success(let (header, block)):
                if let problem = visit(header, block, offset) {
                    result.stop = Stop(offset: offset, problem: problem, expectedPosition: expected)
                    result.hasValidDataAfterStop = hasValidData(after: offset)
                    return result
                }
                expected = header.lastPosition + 1
                offset += header.totalLength
                result.goodEnd = offset
            }
        }
        return result
    }
}
