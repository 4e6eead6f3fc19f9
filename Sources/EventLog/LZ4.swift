import CLZ4

/// LZ4 block compression with a reused state. The only file that imports `CLZ4`.
///
/// Not Sendable: it owns a compression state that one thread at a time may use.
struct LZ4Compressor: ~Copyable {
    private let state: UnsafeMutableRawPointer

    init() {
        state = UnsafeMutableRawPointer.allocate(byteCount: Int(LZ4_sizeofState()), alignment: 16)
    }

    deinit { state.deallocate() }

    /// The worst-case compressed size of `count` input bytes.
    static func bound(_ count: Int) -> Int { Int(LZ4_compressBound(CInt(clamping: count))) }

    /// Compresses `input` and appends the block to `output`; returns the compressed length.
    /// - Throws: ``EventLogError/Code/recordTooLarge`` when the input is over LZ4's size limit.
    func compress(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws(EventLogError) -> Int {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: LZ4Compressor.bound(input.count)))
        let result: Result<Int, EventLogError> = output.withUnsafeMutableBytes { out in
            do throws(EventLogError) {
                return .success(try compress(input, into: UnsafeMutableRawBufferPointer(rebasing: out[start...])))
            } catch {
                return .failure(error)
            }
        }
        output.removeLast(output.count - start - ((try? result.get()) ?? 0))
        return try result.get()
    }
}

extension LZ4Compressor {
    /// Compresses `input` into `destination`, which must hold ``bound(_:)`` bytes; returns the compressed length.
    /// - Throws: ``EventLogError/Code/recordTooLarge`` when the input is over LZ4's size limit.
    func compress(_ input: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer)
        throws(EventLogError) -> Int
    {
        guard input.count <= Int(LZ4_MAX_INPUT_SIZE) else {
            throw EventLogError(.recordTooLarge, "a batch of \(input.count) bytes is over LZ4's block limit")
        }
        precondition(destination.count >= LZ4Compressor.bound(input.count), "LZ4 output buffer too small")
        guard let source = input.baseAddress, let target = destination.baseAddress else { return 0 }
        let written = LZ4_compress_fast_extState(
            state, source.assumingMemoryBound(to: CChar.self), target.assumingMemoryBound(to: CChar.self),
            CInt(input.count), CInt(destination.count), 1)
        guard written > 0 else {
            throw EventLogError(.io, "LZ4 compression failed for a block of \(input.count) bytes")
        }
        return Int(written)
    }
}

enum LZ4 {
    /// Decompresses one block that must expand to exactly `uncompressedCount` bytes.
    /// Returns nil when the block is corrupt (a negative return, or a length other than promised).
    static func decompress(_ block: UnsafeRawBufferPointer, uncompressedCount: Int) -> [UInt8]? {
        guard uncompressedCount >= 0, uncompressedCount <= Int(LZ4_MAX_INPUT_SIZE),
            block.count <= Int(CInt.max)
        else { return nil }
        if uncompressedCount == 0 { return block.isEmpty ? [] : nil }
        var produced: CInt = -1
        let output = [UInt8](unsafeUninitializedCapacity: uncompressedCount) { buffer, count in
            guard let source = block.baseAddress, let destination = buffer.baseAddress else {
                count = 0
                return
            }
            produced = LZ4_decompress_safe(
                source.assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(destination).assumingMemoryBound(to: CChar.self),
                CInt(block.count), CInt(uncompressedCount))
            count = produced > 0 ? Int(produced) : 0
        }
        guard produced == CInt(uncompressedCount) else { return nil }
        return output
    }
}
