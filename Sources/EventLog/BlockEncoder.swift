/// One batch's block as a ``BlockEncoder`` stored it: its bytes and what the header must say.
struct EncodedBlock {
    /// The stored bytes, in the encoder's storage: valid, and never moved, until the encoder's next
    /// ``BlockEncoder/reset()``, so another thread may hash them while the encoder goes on with the next block.
    var stored: UnsafeRawBufferPointer
    var storedLength: Int { stored.count }
    var uncompressedLength: Int
    var isCompressed: Bool
    var count: Int
    var minTime: Int64
    var maxTime: Int64
}

/// Serialises one batch's records (names interned, varint fields) and LZ4-compresses the block: the per-batch
/// part of encoding, which the batches of one append group do in parallel, one encoder per worker thread.
///
/// Not Sendable: one thread at a time (it owns an LZ4 state and scratch buffers).
final class BlockEncoder {
    private let compressor = LZ4Compressor()
    private var names = Interner()
    private var recordsArea: [UInt8] = []
    private var block: [UInt8] = []
    /// One buffer per block encoded since ``reset()`` (and spares from earlier groups): a block's bytes stay
    /// where they are while later blocks are encoded, which a single growing array could not promise.
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var used = 0

    deinit { for buffer in buffers { buffer.deallocate() } }

    /// Forgets the stored blocks of the previous group, keeping the storage.
    func reset() { used = 0 }

    /// Encodes `records` as one batch's block and appends its stored form (compressed unless that would not
    /// be smaller) to ``output``.
    func encode(_ records: UnsafeBufferPointer<PendingRecord>) throws(EventLogError) -> EncodedBlock {
        // Work on a local table: interning through the class property paid a dynamic exclusivity check
        // (a thread-local access set) on every name.
        var names = Interner.placeholder
        swap(&names, &self.names)
        defer { swap(&names, &self.names) }
        names.removeAll()
        var minTime = Int64.max
        var maxTime = Int64.min
        var bound = 0
        for index in records.indices {
            minTime = min(minTime, records[index].time)
            maxTime = max(maxTime, records[index].time)
            // 16 id bytes and at most 10 + 10 + 5 + 10 + 5 + 5 bytes of varints.
            bound += 61 + records[index].record.pointee.payload.count
        }
        if recordsArea.count < bound { recordsArea = Array(repeating: 0, count: bound + bound / 4) }
        let recordsLength = recordsArea.withUnsafeMutableBytes { area -> Int in
            var out = area.baseAddress!
            for index in records.indices {
                out.storeBytes(of: records[index].record.pointee.id.high.bigEndian, as: UInt64.self)
                out.storeBytes(of: records[index].record.pointee.id.low.bigEndian, toByteOffset: 8, as: UInt64.self)
                out += 16
                out = LEB128.store(UInt64(bitPattern: records[index].time &- minTime), at: out)
                out = LEB128.store(UInt64(names.intern(records[index].record.pointee.stream).index), at: out)
                out = LEB128.store(records[index].streamVersion, at: out)
                out = LEB128.store(UInt64(names.intern(records[index].record.pointee.type).index), at: out)
                out = LEB128.store(UInt64(names.intern(records[index].record.pointee.actor).index), at: out)
                let payload = records[index].record.pointee.payload
                out = LEB128.store(UInt64(payload.count), at: out)
                if let source = payload.baseAddress { out.copyMemory(from: source, byteCount: payload.count) }
                out += payload.count
            }
            return out - area.baseAddress!
        }

        var namesBound = 5
        for name in names.names { namesBound += 5 + name.utf8.count }
        if block.count < namesBound + recordsLength {
            block = Array(repeating: 0, count: (namesBound + recordsLength) * 5 / 4)
        }
        let blockLength = block.withUnsafeMutableBytes { block -> Int in
            var out = LEB128.store(UInt64(names.names.count), at: block.baseAddress!)
            for var name in names.names {
                out = name.withUTF8 { utf8 in
                    let next = LEB128.store(UInt64(utf8.count), at: out)
                    if let source = utf8.baseAddress { next.copyMemory(from: source, byteCount: utf8.count) }
                    return next + utf8.count
                }
            }
            recordsArea.withUnsafeBytes { area in out.copyMemory(from: area.baseAddress!, byteCount: recordsLength) }
            return out + recordsLength - block.baseAddress!
        }

        let needed = LZ4Compressor.bound(blockLength)
        if used == buffers.count { buffers.append(UnsafeMutableRawBufferPointer(start: nil, count: 0)) }
        if buffers[used].count < needed {
            buffers[used].deallocate()
            buffers[used] = .allocate(byteCount: needed + needed / 4, alignment: 16)
        }
        let destination = buffers[used]
        used += 1
        let compressed: Result<Int, EventLogError> = block.withUnsafeBytes { block in
            let input = UnsafeRawBufferPointer(rebasing: block[0..<blockLength])
            do throws(EventLogError) {
                let written = try compressor.compress(input, into: destination)
                guard written < blockLength else {
                    // Incompressible: store the block as is, so a batch never grows past its encoded size.
                    destination.baseAddress!.copyMemory(from: input.baseAddress!, byteCount: blockLength)
                    return .success(-1)
                }
                return .success(written)
            } catch {
                return .failure(error)
            }
        }
        let written = try compressed.get()
        let isCompressed = written >= 0
        return EncodedBlock(
            stored: UnsafeRawBufferPointer(rebasing: destination[0..<(isCompressed ? written : blockLength)]),
            uncompressedLength: blockLength, isCompressed: isCompressed, count: records.count, minTime: minTime,
            maxTime: maxTime)
    }
}
