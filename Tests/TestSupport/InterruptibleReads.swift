import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads that go on when a signal interrupts them. Foundation's `availableData`, `readData(ofLength:)` and
/// `readDataToEndOfFile()` stop the whole test process when `read` fails with EINTR, which any signal handled in
/// the test process can cause (a CI run was lost to it).
extension FileHandle {
    /// Blocks until some bytes are available and returns up to `limit` of them; empty at the end of input (or
    /// when the read fails otherwise, which a test then sees as output that ended early).
    public func readAvailable(upTo limit: Int = 1 << 16) -> Data {
        var buffer = [UInt8](repeating: 0, count: limit)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            return count > 0 ? Data(buffer[0..<count]) : Data()
        }
    }

    /// Every byte until the end of input.
    public func readUntilEnd() -> Data {
        var all = Data()
        while true {
            let chunk = readAvailable()
            if chunk.isEmpty { return all }
            all.append(chunk)
        }
    }
}
