import CLZ4
import EventLog
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What this machine can physically do with the benchmark's own bytes, measured in the same run:
/// LZ4 block compression and decompression of encoded batches, and fdatasync after a batch-sized write.
struct MachineLimits {
    var lz4CompressMBps: Double
    var lz4DecompressMBps: Double
    var fdatasyncPerSecond: Double
    /// fdatasync after a 256-byte append (what one small durable command costs the disk), per second.
    var smallFdatasyncPerSecond: Double
    /// Encoded (pre-LZ4) bytes per event in the sample batches.
    var encodedBytesPerEvent: Double
    /// LZ4 output / input on the sample batches.
    var lz4Ratio: Double

    /// Measures each limit for about `seconds`.
    static func measure(mix: ChatMix, directory: String, seconds: Double) throws -> MachineLimits {
        let blocks = BatchImage.blocks(mix: mix, events: 20_000)
        let encodedBytes = blocks.reduce(0) { $0 + $1.bytes.count }
        let encodedEvents = blocks.reduce(0) { $0 + $1.events }
        let lz4 = RawLZ4()
        // Compression: whole passes over the sample blocks until the time is up.
        var compressed: [[UInt8]] = []
        var input = 0
        let compressStart = monotonicNanoseconds()
        repeat {
            compressed = blocks.map { lz4.compress($0.bytes) }
            input += encodedBytes
        } while Double(monotonicNanoseconds() - compressStart) < seconds * 1e9
        let compressSeconds = Double(monotonicNanoseconds() - compressStart) / 1e9
        let compressedBytes = compressed.reduce(0) { $0 + $1.count }
        // Decompression of the same blocks.
        var output = 0
        let decompressStart = monotonicNanoseconds()
        repeat {
            for (block, original) in zip(compressed, blocks) {
                output += lz4.decompress(block, count: original.bytes.count)
            }
        } while Double(monotonicNanoseconds() - decompressStart) < seconds * 1e9
        let decompressSeconds = Double(monotonicNanoseconds() - decompressStart) / 1e9
        return MachineLimits(
            lz4CompressMBps: Double(input) / compressSeconds / 1e6,
            lz4DecompressMBps: Double(output) / decompressSeconds / 1e6,
            fdatasyncPerSecond: try fdatasyncRate(directory: directory, seconds: seconds),
            smallFdatasyncPerSecond: try fdatasyncRate(directory: directory, seconds: seconds, bytes: 256),
            encodedBytesPerEvent: Double(encodedBytes) / Double(encodedEvents),
            lz4Ratio: Double(compressedBytes) / Double(encodedBytes))
    }

    /// Appends `bytes` (64 KiB: a batch) and fdatasyncs, over and over, in a new file (as a log's tail grows):
    /// syncs per second.
    static func fdatasyncRate(directory: String, seconds: Double, bytes: Int = 64 << 10) throws -> Double {
        let path = directory + "/fdatasync-probe"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer {
            close(fd)
            unlink(path)
        }
        let block = [UInt8](repeating: 0x5A, count: bytes)
        var offset = 0
        var syncs = 0
        let start = monotonicNanoseconds()
        repeat {
            let written = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == block.count, fdatasync(fd) == 0 else {
                throw BenchError("write/fdatasync on \(path) failed: \(String(cString: strerror(errno)))")
            }
            offset += block.count
            syncs += 1
        } while Double(monotonicNanoseconds() - start) < seconds * 1e9
        return Double(syncs) / (Double(monotonicNanoseconds() - start) / 1e9)
    }
}

/// LZ4 block (de)compression with a reused state, straight from liblz4, for the machine-limit figures.
///
/// Not Sendable: it owns a compression state.
final class RawLZ4 {
    private let state: UnsafeMutableRawPointer

    init() { state = UnsafeMutableRawPointer.allocate(byteCount: Int(LZ4_sizeofState()), alignment: 16) }

    deinit { state.deallocate() }

    /// The LZ4 block of `input` (acceleration 1, as the log uses).
    func compress(_ input: [UInt8]) -> [UInt8] {
        precondition(input.count <= Int(LZ4_MAX_INPUT_SIZE), "sample block too large for LZ4")
        let capacity = Int(LZ4_compressBound(CInt(input.count)))
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = input.withUnsafeBytes { source in
                Int(
                    LZ4_compress_fast_extState(
                        state, source.baseAddress?.assumingMemoryBound(to: CChar.self),
                        UnsafeMutableRawPointer(buffer.baseAddress)?.assumingMemoryBound(to: CChar.self),
                        CInt(input.count), CInt(capacity), 1))
            }
        }
    }

    /// Decompresses `block` into a scratch buffer of `count` bytes; returns the bytes produced.
    func decompress(_ block: [UInt8], count: Int) -> Int {
        let output = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let produced = block.withUnsafeBytes { source in
                LZ4_decompress_safe(
                    source.baseAddress?.assumingMemoryBound(to: CChar.self),
                    UnsafeMutableRawPointer(buffer.baseAddress)?.assumingMemoryBound(to: CChar.self),
                    CInt(block.count), CInt(count))
            }
            initialized = max(0, Int(produced))
        }
        return output.count
    }
}

/// Encoded (pre-LZ4) batch blocks laid out as docs/FORMAT.md describes the log's batch block: interned
/// names, then per record the 16-byte id, time delta, name indexes and stream version as varints, and the
/// length-prefixed payload. It mirrors `BatchEncoder` (internal to EventLog) so the LZ4 limit is measured
/// on the same kind of bytes the log compresses.
enum BatchImage {
    struct Block {
        var bytes: [UInt8]
        var events: Int
    }

    static func blocks(mix: ChatMix, events: Int, targetBytes: Int = 64 << 10) -> [Block] {
        var blocks: [Block] = []
        var index = 0
        var versions: [String: UInt64] = [:]
        while index < events {
            var names: [String: Int] = [:]
            var nameList: [String] = []
            func intern(_ name: String) -> UInt64 {
                if let known = names[name] { return UInt64(known) }
                names[name] = nameList.count
                nameList.append(name)
                return UInt64(nameList.count - 1)
            }
            var area = BinaryWriter(capacity: targetBytes + 4096)
            var count = 0
            var minTime: Int64?
            while index < events && area.count < targetBytes {
                let record = mix.event(index).record
                let time = record.time ?? 0
                if minTime == nil { minTime = time }
                let version = versions[record.stream.rawValue, default: 0] + 1
                versions[record.stream.rawValue] = version
                area.writeUInt64(record.id.high.bigEndian)
                area.writeUInt64(record.id.low.bigEndian)
                area.writeVarint(UInt64(bitPattern: time &- (minTime ?? time)))
                area.writeVarint(intern(record.stream.rawValue))
                area.writeVarint(version)
                area.writeVarint(intern(record.type))
                area.writeVarint(intern(record.actor))
                area.writeLengthPrefixed(record.payload)
                count += 1
                index += 1
            }
            var block = BinaryWriter(capacity: area.count + 4096)
            block.writeVarint(UInt64(nameList.count))
            for name in nameList { block.writeString(name) }
            block.write(bytes: area.bytes)
            blocks.append(Block(bytes: block.bytes, events: count))
        }
        return blocks
    }
}

/// A failure of the benchmark itself (not of the system under test).
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Nanoseconds on the monotonic clock.
@inline(__always) func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
