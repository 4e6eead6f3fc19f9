/// The fold's path for the commonest events, `MessageSent` and `MessagesRead` (most of a chat log):
/// their ids are looked up straight from the payload bytes, so folding one makes no `String` but the
/// body, and no ``DomainEvent``. Each does exactly what the decoded event's `apply(to:position:time:)`
/// (`ChatFold.swift`) does, and a payload that does not decode changes nothing, as there.
///
/// Each returns the index of the user who acts (sender, reader) when the record's `actor` is that user's
/// id, so that the audit index can reuse it; nil otherwise, or when the payload does not decode.
extension ProjectionState {
    /// Folds a `MessageSent` payload (see `MessageSent.apply(to:position:time:)`).
    mutating func foldMessageSent(_ payload: UnsafeRawBufferPointer, actor: String, position: UInt64, time: Int64)
        -> Int32?
    {
        var reader = ByteReader(payload)
        guard let e = try? MessageSentBytes(reading: &reader) else { return nil }
        let sender = user(utf8: e.sender)
        let acting = Self.isID(actor, e.sender) ? sender : nil
        guard let room = rooms.index(ofUTF8: e.room) else { return acting }
        let (message, isNew) = messageIDs.intern(utf8: e.message)
        guard isNew else { return acting }
        chat.sent(
            message: message, room: room, sender: sender, kind: e.kind, body: e.body, media: e.media,
            sealed: e.sealed, replyTo: e.replyTo, position: position, time: time, blockers: graph.blockedBy[Int(sender)]
        )
        return acting
    }

    /// Folds a `MessagesRead` payload (see `MessagesRead.apply(to:position:time:)`).
    mutating func foldMessagesRead(_ payload: UnsafeRawBufferPointer, actor: String, position: UInt64) -> Int32? {
        var reader = ByteReader(payload)
        guard let e = try? MessagesReadBytes(reading: &reader) else { return nil }
        let user = user(utf8: e.user)
        let acting = Self.isID(actor, e.user) ? user : nil
        guard let room = rooms.index(ofUTF8: e.room), let message = messageIDs.index(ofUTF8: e.upTo),
            chat.messages[Int(message)].room == room
        else { return acting }
        chat.read(room: room, user: user, upTo: message, position: position, graph: graph)
        return acting
    }

    /// Whether `actor` is the id whose UTF-8 bytes are `bytes` (bytes that are not valid UTF-8 never are).
    private static func isID(_ actor: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var actor = actor
        return actor.withUTF8 { $0.count == bytes.count && $0.elementsEqual(bytes) }
    }
}

/// A `MessageSent` payload read like `MessageSent(reading:version:)`, its ids left as bytes (which point
/// into the payload: use it only while the payload's bytes are borrowed).
private struct MessageSentBytes {
    var room: UnsafeRawBufferPointer
    var message: UnsafeRawBufferPointer
    var sender: UnsafeRawBufferPointer
    var kind: MessageKind
    var body: String?
    var media: Media?
    var replyTo: String?
    var sealed: UnsafeRawBufferPointer?

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        var version = try reader.byte()
        let isSealed = version == sealedPayloadMarker
        if isSealed { version = try reader.byte() }
        guard version >= 1, version <= MessageSent.schemaVersion else {
            throw ByteReaderError(description: "MessageSent schema version \(version) is not one this build reads")
        }
        room = try reader.utf8()
        message = try reader.utf8()
        sender = try reader.utf8()
        kind = try reader.rawEnum(MessageKind.self)
        body = try reader.optionalString()
        media = try reader.bool() ? try Media(reading: &reader) : nil
        replyTo = try reader.optionalString()
        // The sender's name is not folded, but a malformed one makes the payload undecodable, as there.
        if try reader.bool() { _ = try reader.utf8() }
        if isSealed { sealed = try reader.utf8() }
    }
}

/// A `MessagesRead` payload read like `MessagesRead(reading:version:)`, its ids left as bytes (see above).
private struct MessagesReadBytes {
    var room: UnsafeRawBufferPointer
    var user: UnsafeRawBufferPointer
    var upTo: UnsafeRawBufferPointer

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        let version = try reader.byte()
        guard version >= 1, version <= MessagesRead.schemaVersion else {
            throw ByteReaderError(description: "MessagesRead schema version \(version) is not one this build reads")
        }
        room = try reader.utf8()
        user = try reader.utf8()
        upTo = try reader.utf8()
    }
}
