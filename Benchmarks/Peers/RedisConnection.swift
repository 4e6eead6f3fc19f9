import NIOCore
import NIOPosix

// A minimal pipelined Redis client, written here on SwiftNIO because no Redis client package is mirrored for this
// project: RESP2 requests (arrays of bulk strings) and replies (simple strings, errors, integers, bulk strings,
// arrays). Many commands go out in one write and their replies are matched in order, so a producer never waits
// a round trip per command.

/// One RESP reply.
enum RESPValue: Sendable {
    case simple(String)
    case error(String)
    case integer(Int64)
    /// A bulk string (nil: the null bulk string), a slice of the received bytes.
    case bulk(ByteBuffer?)
    /// An array (nil: the null array).
    case array([RESPValue]?)

    /// The elements of an array reply; empty for anything else.
    var elements: [RESPValue] {
        if case .array(let values?) = self { return values }
        return []
    }

    /// The text of a simple or bulk string reply.
    var text: String? {
        switch self {
        case .simple(let text): return text
        case .bulk(let bytes?): return String(buffer: bytes)
        default: return nil
        }
    }
}

/// A Redis error reply, or a connection that failed.
struct RedisError: Error, CustomStringConvertible {
    var description: String
}

/// One request argument.
enum RESPArgument: Sendable, ExpressibleByStringLiteral {
    case text(String)
    case bytes([UInt8])
    case integer(Int64)

    init(stringLiteral value: String) { self = .text(value) }
}

extension ByteBuffer {
    /// Appends `arguments` as one RESP request: an array of bulk strings.
    mutating func writeRESPCommand(_ arguments: [RESPArgument]) {
        writeRESPHeader(UInt8(ascii: "*"), arguments.count)
        for argument in arguments {
            switch argument {
            case .text(let text):
                writeRESPHeader(UInt8(ascii: "$"), text.utf8.count)
                writeString(text)
            case .bytes(let bytes):
                writeRESPHeader(UInt8(ascii: "$"), bytes.count)
                writeBytes(bytes)
            case .integer(let number):
                let text = String(number)
                writeRESPHeader(UInt8(ascii: "$"), text.utf8.count)
                writeString(text)
            }
            writeStaticString("\r\n")
        }
    }

    private mutating func writeRESPHeader(_ kind: UInt8, _ count: Int) {
        writeInteger(kind)
        writeString(String(count))
        writeStaticString("\r\n")
    }
}

/// Parses one RESP value from `bytes` at `offset`, advancing it; nil when the bytes end before the value does.
/// Bulk strings are slices of `buffer` (whose readable bytes `bytes` are), not copies.
private func parseRESP(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, _ buffer: ByteBuffer) throws
    -> RESPValue?
{
    guard offset < bytes.count else { return nil }
    let kind = bytes[offset]
    var end = offset + 1
    while end + 1 < bytes.count && !(bytes[end] == 13 && bytes[end + 1] == 10) { end += 1 }
    guard end + 1 < bytes.count else { return nil }
    let line = UnsafeRawBufferPointer(rebasing: bytes[(offset + 1)..<end])
    func number() throws -> Int64 {
        var value: Int64 = 0
        var negative = false
        for (index, byte) in line.enumerated() {
            if index == 0 && byte == UInt8(ascii: "-") {
                negative = true
            } else if byte >= 48 && byte <= 57 {
                value = value &* 10 &+ Int64(byte - 48)
            } else {
                throw RedisError(description: "malformed RESP number")
            }
        }
        return negative ? -value : value
    }
    let next = end + 2
    switch kind {
    case UInt8(ascii: "+"):
        offset = next
        return .simple(String(decoding: line, as: UTF8.self))
    case UInt8(ascii: "-"):
        offset = next
        return .error(String(decoding: line, as: UTF8.self))
    case UInt8(ascii: ":"):
        let value = try number()
        offset = next
        return .integer(value)
    case UInt8(ascii: "$"):
        let count = try number()
        if count < 0 {
            offset = next
            return .bulk(nil)
        }
        guard next + Int(count) + 2 <= bytes.count else { return nil }
        offset = next + Int(count) + 2
        return .bulk(buffer.getSlice(at: buffer.readerIndex + next, length: Int(count)))
    case UInt8(ascii: "*"):
        let count = try number()
        var cursor = next
        if count < 0 {
            offset = cursor
            return .array(nil)
        }
        var values: [RESPValue] = []
        values.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let value = try parseRESP(bytes, &cursor, buffer) else { return nil }
            values.append(value)
        }
        offset = cursor
        return .array(values)
    default:
        throw RedisError(description: "unexpected RESP type byte \(kind)")
    }
}

/// Writes requests with the promises of their replies, and completes those promises in order as replies arrive.
private final class RESPHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = (ByteBuffer, [EventLoopPromise<RESPValue>])
    typealias OutboundOut = ByteBuffer

    private var received: ByteBuffer?
    private var waiting = CircularBuffer<EventLoopPromise<RESPValue>>()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let (bytes, replies) = unwrapOutboundIn(data)
        waiting.append(contentsOf: replies)
        context.write(wrapOutboundOut(bytes), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if received == nil {
            received = incoming
        } else {
            received!.writeBuffer(&incoming)
        }
        guard var buffer = received else { return }
        do {
            var values: [RESPValue] = []
            let consumed = try buffer.withUnsafeReadableBytes { bytes -> Int in
                var offset = 0
                while let value = try parseRESP(bytes, &offset, buffer) { values.append(value) }
                return offset
            }
            // A reply may end mid-value: the parsed prefix is consumed, the rest waits for more bytes.
            buffer.moveReaderIndex(forwardBy: consumed)
            received = buffer.readableBytes > 0 ? buffer : nil
            for value in values {
                guard let promise = waiting.popFirst() else {
                    throw RedisError(description: "a reply came that no request asked for")
                }
                promise.succeed(value)
            }
        } catch {
            fail(error)
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(RedisError(description: "the connection to Redis closed"))
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error) {
        while let promise = waiting.popFirst() { promise.fail(error) }
    }
}

/// One connection to a Redis server, shared safely by the tasks of one producer.
///
/// `Sendable`: it holds only the channel; requests reach the handler through the channel's event loop.
final class RedisConnection: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects to `host`:`port`.
    static func connect(host: String, port: Int, group: any EventLoopGroup) async throws -> RedisConnection {
        let channel = try await ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(RESPHandler()) }
            }
            .connect(host: host, port: port).get()
        return RedisConnection(channel: channel)
    }

    /// Sends `commands` in one write and returns their replies in order.
    /// - Throws: ``RedisError`` for an error reply, or the connection's failure.
    func send(_ commands: [[RESPArgument]]) async throws -> [RESPValue] {
        var bytes = channel.allocator.buffer(capacity: 256 * commands.count)
        for command in commands { bytes.writeRESPCommand(command) }
        let promises = commands.map { _ in channel.eventLoop.makePromise(of: RESPValue.self) }
        channel.writeAndFlush((bytes, promises), promise: nil)
        var replies: [RESPValue] = []
        replies.reserveCapacity(promises.count)
        for promise in promises {
            let reply = try await promise.futureResult.get()
            if case .error(let message) = reply { throw RedisError(description: message) }
            replies.append(reply)
        }
        return replies
    }

    /// Sends one command and returns its reply.
    /// - Throws: ``RedisError`` for an error reply, or the connection's failure.
    func send(_ command: [RESPArgument]) async throws -> RESPValue {
        try await send([command])[0]
    }

    func close() async throws { try await channel.close() }
}
