import NIOCore

/// One operation the server sent.
enum ServerOperation {
    case info(String)
    case message(sid: UInt64, NATSMessage)
    case ping
    case pong
    case ok
    case error(String)
}

/// Splits the byte stream from the server into operations, however the bytes were cut into reads.
///
/// A control line may be up to ``maximumControlLine`` bytes and a payload up to ``maximumPayload``; anything
/// larger, or anything that is not the protocol, is a `.protocolError` and the connection is dropped.
struct ProtocolDecoder: ByteToMessageDecoder {
    typealias InboundOut = ServerOperation

    /// INFO lines list the cluster's URLs, so they can be long.
    var maximumControlLine = 64 << 10
    /// The largest `max_payload` a server can be configured with.
    var maximumPayload = 64 << 20

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let operation = try next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(operation))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        while let operation = try next(from: &buffer) {
            context.fireChannelRead(Self.wrapInboundOut(operation))
        }
        return .needMoreData
    }

    /// The next whole operation at the front of `buffer` (consumed), or nil when more bytes are needed.
    func next(from buffer: inout ByteBuffer) throws(NATSError) -> ServerOperation? {
        let view = buffer.readableBytesView
        let scanned = view.prefix(maximumControlLine + 2)
        guard let newline = scanned.firstIndex(of: UInt8(ascii: "\n")) else {
            if view.count > maximumControlLine + 1 {
                throw NATSError(
                    .protocolError,
                    "the server sent a control line longer than \(maximumControlLine) bytes: "
                        + "'\(String(decoding: view.prefix(60), as: UTF8.self))…'")
            }
            return nil
        }
        let lineLength = newline - view.startIndex
        var lineEnd = newline
        if lineEnd > view.startIndex && view[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
        let line = view[view.startIndex..<lineEnd]
        let nameEnd = line.firstIndex { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } ?? line.endIndex
        let name = String(decoding: line[line.startIndex..<nameEnd], as: UTF8.self).uppercased()
        let rest = line[nameEnd...]

        switch name {
        case "MSG", "HMSG":
            let arguments = rest.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") })
                .map { String(decoding: $0, as: UTF8.self) }
            let hasHeaders = name == "HMSG"
            let fixed = hasHeaders ? 4 : 3
            guard arguments.count == fixed || arguments.count == fixed + 1 else {
                throw malformed(line)
            }
            let replyTo = arguments.count == fixed + 1 ? arguments[2] : nil
            guard let sid = UInt64(arguments[1]), let total = Int(arguments[arguments.count - 1]), total >= 0,
                let headerLength = hasHeaders ? Int(arguments[arguments.count - 2]) : 0, headerLength >= 0,
                headerLength <= total
            else {
                throw malformed(line)
            }
            guard total <= maximumPayload else {
                throw NATSError(
                    .protocolError,
                    "the server sent a \(total)-byte message, over the client's \(maximumPayload)-byte limit")
            }
            let frameLength = lineLength + 1 + total + 2
            guard view.count >= frameLength else { return nil }
            let bodyStart = buffer.readerIndex + lineLength + 1
            guard buffer.getInteger(at: bodyStart + total, as: UInt16.self) == 0x0D0A else {
                throw NATSError(
                    .protocolError,
                    "a \(name) of \(total) bytes is not followed by CRLF: '\(String(decoding: line, as: UTF8.self))'")
            }
            var message = NATSMessage(subject: arguments[0], replyTo: replyTo, payload: [])
            if hasHeaders, let block = buffer.getBytes(at: bodyStart, length: headerLength) {
                let parsed = try NATSHeaders.parse(block)
                message.headers = parsed.headers
                message.status = parsed.status
                message.statusDescription = parsed.statusDescription
            }
            message.payload = buffer.getBytes(at: bodyStart + headerLength, length: total - headerLength) ?? []
            buffer.moveReaderIndex(forwardBy: frameLength)
            return .message(sid: sid, message)
        case "PING":
            buffer.moveReaderIndex(forwardBy: lineLength + 1)
            return .ping
        case "PONG":
            buffer.moveReaderIndex(forwardBy: lineLength + 1)
            return .pong
        case "+OK":
            buffer.moveReaderIndex(forwardBy: lineLength + 1)
            return .ok
        case "-ERR":
            var text = String(decoding: rest, as: UTF8.self).trimmingWhitespace()
            if text.count >= 2 && text.hasPrefix("'") && text.hasSuffix("'") {
                text = String(text.dropFirst().dropLast())
            }
            buffer.moveReaderIndex(forwardBy: lineLength + 1)
            return .error(text)
        case "INFO":
            let json = String(decoding: rest, as: UTF8.self).trimmingWhitespace()
            buffer.moveReaderIndex(forwardBy: lineLength + 1)
            return .info(json)
        default:
            throw NATSError(
                .protocolError,
                "the server sent an unknown operation: '\(String(decoding: line.prefix(80), as: UTF8.self))'")
        }
    }

    private func malformed(_ line: ByteBufferView.SubSequence) -> NATSError {
        NATSError(
            .protocolError, "the server sent a malformed line: '\(String(decoding: line.prefix(200), as: UTF8.self))'")
    }
}
