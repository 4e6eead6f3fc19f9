import NIOCore

/// The bytes of the operations the client sends, and the checks that keep them well framed.
enum ClientOperations {
    /// - Throws: `.invalidSubject` when `subject` is empty or holds white space or a control character.
    static func validate(subject: String, role: String = "subject") throws(NATSError) {
        guard !subject.isEmpty, !subject.utf8.contains(where: { $0 <= 32 || $0 == 127 }) else {
            throw NATSError(.invalidSubject, "the \(role) '\(subject)' is empty or holds white space")
        }
    }

    /// `PUB subject [reply] size\r\npayload\r\n` or `HPUB subject [reply] headerSize totalSize\r\nheaders payload\r\n`.
    static func publish(subject: String, replyTo: String?, headerBlock: [UInt8]?, payload: [UInt8]) -> ByteBuffer {
        let reply = replyTo.map { " " + $0 } ?? ""
        let line: String
        if let headerBlock {
            line = "HPUB \(subject)\(reply) \(headerBlock.count) \(headerBlock.count + payload.count)\r\n"
        } else {
            line = "PUB \(subject)\(reply) \(payload.count)\r\n"
        }
        var buffer = ByteBufferAllocator().buffer(
            capacity: line.utf8.count + (headerBlock?.count ?? 0) + payload.count + 2)
        buffer.writeString(line)
        if let headerBlock { buffer.writeBytes(headerBlock) }
        buffer.writeBytes(payload)
        buffer.writeStaticString("\r\n")
        return buffer
    }

    static func subscribe(subject: String, queue: String?, sid: UInt64) -> String {
        if let queue { "SUB \(subject) \(queue) \(sid)\r\n" } else { "SUB \(subject) \(sid)\r\n" }
    }

    static func unsubscribe(sid: UInt64) -> String {
        "UNSUB \(sid)\r\n"
    }
}
