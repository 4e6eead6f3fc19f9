import EventLog
import Foundation
import HTTPTypes
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// A small HTTP/1.1 and WebSocket client over a blocking socket, for the tests: it keeps the test build free
// of an HTTP client package (and the TLS stack one brings). Every blocking call runs on a thread of its own,
// never on the cooperative pool the server's handlers share with the tests.

/// Runs `body` on a new thread and returns its result.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onDedicatedThread("parley-test-wire", body)
}

struct WireError: Error, CustomStringConvertible {
    var description: String
}

/// One TCP connection to 127.0.0.1, read and written whole.
final class WireSocket: @unchecked Sendable {
    // Used by one task at a time (each test drives its connection sequentially).
    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: Int, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 30) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw WireError(description: "socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw WireError(description: "connect to port \(port): errno \(errno)")
        }
        descriptor = fd
    }

    deinit { Glibc.close(descriptor) }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw WireError(description: "send: errno \(errno)") }
            offset += written
        }
    }

    /// Reads more bytes into the buffer; false at the end of the stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw WireError(description: "recv: errno \(errno) (timed out?)") }
        if count == 0 { return false }
        buffer += chunk[0..<count]
        return true
    }

    /// The next `count` bytes.
    func read(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw WireError(description: "connection closed") }
        }
        defer { buffer.removeFirst(count) }
        return Array(buffer[0..<count])
    }

    /// Bytes up to and including the first CRLF CRLF.
    func readHead() throws -> String {
        while true {
            if let end = buffer.indices.dropLast(3).first(where: {
                buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
            }) {
                return String(decoding: try read(end + 4), as: UTF8.self)
            }
            guard try fill() else { throw WireError(description: "connection closed in a header") }
        }
    }

    func shutdown() { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }

    /// Whether the server has closed the connection while nothing was asked: it is readable, and what there is
    /// to read is its end. (A server closes a connection that waits too long for its first request, or idles
    /// too long between two.)
    var isClosedByPeer: Bool {
        guard buffer.isEmpty else { return false }
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0
    }
}

/// An HTTP answer as the tests read it.
struct WireResponse: Sendable {
    var status: Int
    var headers: HTTPFields
    var body: String
}

/// Keep-alive HTTP/1.1 requests on one connection; as HTTP clients do, a connection the server closed while it
/// was idle is replaced by a new one before the next request.
final class HTTPWire: Sendable {
    let port: Int
    private let current: Mutex<WireSocket>

    init(port: Int) throws {
        self.port = port
        current = Mutex(try WireSocket(port: port))
    }

    /// The connection the next request goes on.
    var socket: WireSocket { current.withLock { $0 } }

    /// The connection, or a new one when the server closed it.
    private func openSocket() throws -> WireSocket {
        try current.withLock { socket in
            if socket.isClosedByPeer { socket = try WireSocket(port: port) }
            return socket
        }
    }

    func request(_ method: HTTPRequest.Method, _ path: String, headers: HTTPFields, body: String?) async throws
        -> WireResponse
    {
        return try await offPool { [self] in
            let socket = try openSocket()
            var head = "\(method.rawValue) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            for field in headers { head += "\(field.name.rawName): \(field.value)\r\n" }
            let bytes = Array((body ?? "").utf8)
            if body != nil || method == .post || method == .put || method == .patch {
                head += "Content-Length: \(bytes.count)\r\n"
            }
            try socket.write(Array((head + "\r\n").utf8) + bytes)
            let lines = try socket.readHead().split(separator: "\r\n")
            guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ")[1]) else {
                throw WireError(description: "not an HTTP answer: \(lines.first ?? "")")
            }
            var fields = HTTPFields()
            var length = 0
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = String(line[..<colon])
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if let key = HTTPField.Name(name) { fields.append(HTTPField(name: key, value: value)) }
                if name.lowercased() == "content-length" { length = Int(value) ?? 0 }
            }
            let text = String(decoding: try socket.read(length), as: UTF8.self)
            return WireResponse(status: status, headers: fields, body: text)
        }
    }
}

/// A WebSocket client: the opening handshake, masked text frames out, frames in.
final class WebSocketWire: Sendable {
    enum Frame: Equatable {
        case text(String)
        case close(code: Int)
    }

    let socket: WireSocket

    /// Connects to `/v1/live`, with `Authorization: Bearer token` when given.
    init(port: Int, token: String? = nil, receiveBuffer: Int32? = nil) async throws {
        let socket = try WireSocket(port: port, receiveBuffer: receiveBuffer)
        self.socket = socket
        try await offPool {
            var request =
                "GET /v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            if let token { request += "Authorization: Bearer \(token)\r\n" }
            try socket.write(Array((request + "\r\n").utf8))
            let head = try socket.readHead()
            guard head.hasPrefix("HTTP/1.1 101") else { throw WireError(description: "no upgrade: \(head)") }
        }
    }

    /// Sends one masked text frame.
    func send(_ text: String) async throws {
        let socket = socket
        try await offPool {
            let payload = Array(text.utf8)
            let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
            var frame: [UInt8] = [0x81]
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
            }
            frame += mask
            frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            try socket.write(frame)
        }
    }

    /// The next text or close frame (pings are skipped).
    func receive() async throws -> Frame {
        let socket = socket
        return try await offPool {
            while true {
                let (opcode, payload) = try Self.readFrame(socket)
                switch opcode {
                case 1: return .text(String(decoding: payload, as: UTF8.self))
                case 8: return .close(code: payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005)
                default: continue
                }
            }
        }
    }

    /// One frame from the server (unmasked): its opcode and payload. Blocks until it is whole.
    static func readFrame(_ socket: WireSocket) throws -> (opcode: UInt8, payload: [UInt8]) {
        let head = try socket.read(2)
        var length = Int(head[1] & 0x7f)
        if length == 126 {
            let bytes = try socket.read(2)
            length = Int(bytes[0]) << 8 | Int(bytes[1])
        } else if length == 127 {
            length = try socket.read(8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (head[0] & 0x0f, try socket.read(length))
    }

    /// Drops the connection without a close frame.
    func cut() { socket.shutdown() }
}
