import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// Raw reads for the tests of what the server does before a request is whole and when it closes a connection:
// everything up to the end of the stream, a trickled head, a WebSocket close frame's code and reason.

extension WireSocket {
    /// Everything the server sends until it ends the connection (an orderly close or a reset), as text.
    /// - Throws: ``WireError`` when the receive timeout passes first.
    func readToEnd() async throws -> String {
        let descriptor = descriptor
        return try await offPool {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count == 0 || (count < 0 && errno == ECONNRESET) { break }
                if count < 0 {
                    throw WireError(description: "recv: errno \(errno) (timed out?) after \(bytes.count) bytes")
                }
                bytes += chunk[0..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Sends `head` one byte at a time, one every `interval`, until the server answers or ends the connection
    /// (then returns whether all of `head` was sent), or `head` runs out (returns true).
    func trickle(_ head: String, interval: Duration) async throws -> Bool {
        let descriptor = descriptor
        let milliseconds = Int32(
            interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000)
        return try await offPool {
            for byte in Array(head.utf8) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                // Waiting for the server to answer paces the trickle: the thread is the test's own.
                if poll(&poller, 1, milliseconds) > 0 { return false }
                var one = byte
                guard send(descriptor, &one, 1, Int32(MSG_NOSIGNAL)) == 1 else { return false }
            }
            return true
        }
    }
}

extension WebSocketWire {
    /// Every text frame, decoded, up to the close frame; and its code and reason.
    func framesUntilClose() async throws -> (frames: [LiveFrame], code: Int, reason: String) {
        let socket = socket
        return try await offPool {
            var frames: [LiveFrame] = []
            while true {
                let (opcode, payload) = try WebSocketWire.readFrame(socket)
                switch opcode {
                case 1: frames.append(try JSONDecoder().decode(LiveFrame.self, from: Data(payload)))
                case 8:
                    guard payload.count >= 2 else { return (frames, 1005, "") }
                    let code = Int(payload[0]) << 8 | Int(payload[1])
                    return (frames, code, String(decoding: payload.dropFirst(2), as: UTF8.self))
                default: continue
                }
            }
        }
    }
}
