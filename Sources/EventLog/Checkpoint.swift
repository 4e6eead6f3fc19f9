#if canImport(Glibc)
    import Glibc
#endif

/// The saved indexes of a cleanly closed log: what makes the next open instant.
///
/// Derived data: it is used only when the state file says the log was closed cleanly, its own CRC holds,
/// and every segment file still has the size, modification time and inode it had at close. Anything
/// else — a segment touched behind the log's back — means a full scan.
enum Checkpoint {
    static let magic: UInt32 = 0x4B43_4C50  // "PLCK"

    static func write(_ index: LogIndex, directory: String) throws(EventLogError) {
        var writer = BinaryWriter(capacity: 1 << 20)
        writer.writeUInt32(magic)
        writer.writeUInt16(UInt16(BatchFormat.version))
        writer.writeUInt64(index.committed)
        writer.write(bytes: index.committedDigest)
        writer.writeVarint(UInt64(index.uncompressedBytes))
        writer.writeVarint(UInt64(index.segments.count))
        for segment in index.segments {
            let print = try FileSystem.requireFingerprint(segment.path)
            writer.writeString(String(segment.path.split(separator: "/").last ?? ""))
            writer.writeVarint(segment.firstPosition)
            writer.writeVarint(UInt64(segment.length))
            writer.write(segment.isSealed ? 1 : 0)
            writer.writeUInt64(print.size)
            writer.writeSignedVarint(print.modifiedSeconds)
            writer.writeSignedVarint(print.modifiedNanoseconds)
            writer.writeUInt64(print.inode)
        }
        writer.writeVarint(UInt64(index.batches.count))
        for batch in index.batches {
            writer.writeVarint(UInt64(batch.segment))
            writer.writeVarint(UInt64(batch.offset))
            writer.writeVarint(batch.firstPosition)
            writer.writeVarint(UInt64(batch.count))
            writer.writeVarint(UInt64(batch.totalLength))
            writer.writeVarint(UInt64(batch.uncompressedLength))
            writer.writeSignedVarint(batch.minTime)
            writer.writeSignedVarint(batch.maxTime)
        }
        writer.writeVarint(UInt64(index.ids.count))
        index.ids.forEachID { id, position in
            writer.writeUInt64(id.high)
            writer.writeUInt64(id.low)
            writer.writeVarint(position)
        }
        writer.writeVarint(UInt64(index.streams.count))
        index.streams.forEachStream { name, positions in
            writer.writeString(name)
            writer.writeVarint(UInt64(positions.count))
            var previous: UInt64 = 0
            for position in positions {
                writer.writeVarint(position - previous)
                previous = position
            }
        }
        writer.writeVarint(UInt64(index.typeCounts.count))
        for (name, count) in index.typeCounts {
            writer.writeString(name)
            writer.writeVarint(UInt64(count))
        }
        writer.writeUInt32(CRC32C.checksum(writer.bytes))
        try FileSystem.writeAtomically(
            writer.bytes, to: directory + "/" + EventLog.checkpointFileName, directory: directory)
    }

    /// Loads the checkpoint if it is whole and matches the files on disk; nil means "scan instead".
    static func load(directory: String, segmentNames: [String], state: StateFile, readOnly: Bool = false)
        throws(EventLogError) -> LogIndex?
    {
        guard let bytes = try FileSystem.read(directory + "/" + EventLog.checkpointFileName), bytes.count > 4 else {
            return nil
        }
        let body = bytes.count - 4
        var crcReader = BinaryReader(bytes, offset: body)
        guard (try? crcReader.readUInt32()) == CRC32C.checksum(Array(bytes[0..<body])) else {
            return nil
        }
        do {
            var reader = BinaryReader(bytes, end: body)
            guard try reader.readUInt32() == magic, try reader.readUInt16() == BatchFormat.version else { return nil }
            var index = LogIndex()
            index.committed = try reader.readUInt64()
            index.committedDigest = try reader.readBytes(32)
            guard index.committed == state.head, index.committedDigest == state.digest else { return nil }
            index.uncompressedBytes = try reader.readCount(limit: Int.max)
            let segmentCount = try reader.readCount()
            guard segmentCount == segmentNames.count else { return nil }
            for number in 0..<segmentCount {
                let name = try reader.readString()
                guard name == segmentNames[number] else { return nil }
                let path = directory + "/" + name
                let firstPosition = try reader.readVarint()
                let length = try reader.readCount(limit: Int.max)
                let sealed = try reader.readByte() == 1
                let saved = FileFingerprint(
                    size: try reader.readUInt64(), modifiedSeconds: try reader.readSignedVarint(),
                    modifiedNanoseconds: try reader.readSignedVarint(), inode: try reader.readUInt64())
                guard FileSystem.fingerprint(path) == saved, saved.size == UInt64(length) else { return nil }
                let file = try FileDescriptor.open(path, flags: readOnly ? O_RDONLY : O_RDWR)
                index.segments.append(
                    SegmentState(firstPosition: firstPosition, path: path, file: file, length: length, isSealed: sealed)
                )
            }
            let batchCount = try reader.readCount()
            index.batches.reserveCapacity(batchCount)
            for _ in 0..<batchCount {
                index.batches.append(
                    BatchLocation(
                        segment: Int32(try reader.readCount(limit: segmentCount)),
                        offset: Int64(try reader.readCount(limit: Int.max)), firstPosition: try reader.readVarint(),
                        count: UInt32(try reader.readCount()), totalLength: UInt32(try reader.readCount()),
                        uncompressedLength: UInt32(try reader.readCount()), minTime: try reader.readSignedVarint(),
                        maxTime: try reader.readSignedVarint()))
            }
            if readOnly {
                // A reader rarely needs them (a lookup by id, a stream, the stats): read them when it does.
                index.deferredRecordIndex = reader
                return index
            }
            return try loadRecordIndex(&reader, into: &index) ? index : nil
        } catch {
            return nil
        }
    }

    /// Reads the id → position table, the streams and the type counts from where `reader` stands into `index`;
    /// false when they contradict themselves.
    /// - Throws: ``BinaryReader/Truncated`` when the bytes end early.
    static func loadRecordIndex(_ reader: inout BinaryReader, into index: inout LogIndex) throws(BinaryReader.Truncated)
        -> Bool
    {
        let idCount = try reader.readCount(limit: Int.max)
        index.ids.reserveCapacity(min(idCount, reader.remaining / 17))
        for _ in 0..<idCount {
            let id = EventID(high: try reader.readUInt64(), low: try reader.readUInt64())
            let position = try reader.readVarint()
            guard position > 0, position <= index.committed, index.ids.lookupOrInsert(id, position) == nil else {
                return false
            }
        }
        let streamCount = try reader.readCount(limit: Int.max)
        for _ in 0..<streamCount {
            let name = try reader.readString()
            let count = try reader.readCount(limit: Int.max)
            var positions: [UInt64] = []
            positions.reserveCapacity(min(count, reader.remaining))
            var previous: UInt64 = 0
            for _ in 0..<count {
                previous += try reader.readVarint()
                positions.append(previous)
            }
            guard index.streams.insert(name, positions: positions) else { return false }
        }
        let typeCount = try reader.readCount()
        for _ in 0..<typeCount {
            let name = try reader.readString()
            index.typeCounts[name] = try reader.readCount(limit: Int.max)
        }
        return true
    }
}
