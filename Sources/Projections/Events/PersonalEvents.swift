/// Which fields of each event type are personal data, sealed under their owner's key (docs/ERASURE.md, "What is
/// sealed"). Each conformance writes and reads exactly those fields, in the order of its payload.

extension UserRegistered: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) {
        writer.optionalString(phone)
        writer.optionalString(email)
        writer.optionalString(name)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        phone = try reader.optionalString()
        email = try reader.optionalString()
        name = try reader.optionalString()
    }
    mutating func blankPersonal() {
        phone = nil
        email = nil
        name = nil
    }
}

extension ProfileUpdated: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) {
        var copy = self
        copy.user = UserID("")
        copy.cleared = []
        copy.write(to: &writer)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        let opened = try ProfileUpdated(reading: &reader, version: 1)
        name = opened.name
        nickname = opened.nickname
        photoURL = opened.photoURL
        about = opened.about
        location = opened.location
        interests = opened.interests
        dogs = opened.dogs
    }
    mutating func blankPersonal() {
        name = nil
        nickname = nil
        photoURL = nil
        about = nil
        location = nil
        interests = nil
        dogs = nil
    }
}

extension RoomCreated: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) { writer.optionalString(name) }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        name = try reader.optionalString()
    }
    mutating func blankPersonal() { name = nil }
}

extension MessageSent: PersonalEvent {
    /// Kept sealed: the chat holds the seal and opens it when a query shows the message.
    func openedForFold(in state: ProjectionState) -> MessageSent { self }
    func writePersonal(to writer: inout ByteWriter) {
        writer.optionalString(body)
        writer.bool(media != nil)
        media?.write(to: &writer)
        writer.optionalString(senderName)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        body = try reader.optionalString()
        media = try reader.bool() ? try Media(reading: &reader) : nil
        senderName = try reader.optionalString()
    }
    mutating func blankPersonal() {
        body = nil
        media = nil
        senderName = nil
    }
}

extension MessageEdited: PersonalEvent {
    /// Kept sealed, as ``MessageSent``.
    func openedForFold(in state: ProjectionState) -> MessageEdited { self }
    func personalOwner(in state: ProjectionState) -> UserID? { expectedActor(in: state).map { UserID($0) } }
    func writePersonal(to writer: inout ByteWriter) { writer.string(body) }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) { body = try reader.string() }
    mutating func blankPersonal() { body = "" }
}

extension GratitudeTagged: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) {
        writer.string(recipient)
        writer.string(body)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        recipient = try reader.string()
        body = try reader.string()
    }
    mutating func blankPersonal() {
        recipient = ""
        body = ""
    }
}

extension ActivityHosted: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) {
        writer.string(title)
        writer.optionalString(description)
        writer.optionalString(place)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        title = try reader.string()
        description = try reader.optionalString()
        place = try reader.optionalString()
    }
    mutating func blankPersonal() {
        title = ""
        description = nil
        place = nil
    }
}

extension ActivityUpdated: PersonalEvent {
    func personalOwner(in state: ProjectionState) -> UserID? { expectedActor(in: state).map { UserID($0) } }
    func writePersonal(to writer: inout ByteWriter) {
        writer.optionalString(title)
        writer.optionalString(description)
        writer.optionalString(place)
    }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) {
        title = try reader.optionalString()
        description = try reader.optionalString()
        place = try reader.optionalString()
    }
    mutating func blankPersonal() {
        title = nil
        description = nil
        place = nil
    }
}

extension DeviceRegistered: PersonalEvent {
    func writePersonal(to writer: inout ByteWriter) { writer.string(token) }
    mutating func readPersonal(from reader: inout ByteReader) throws(ByteReaderError) { token = try reader.string() }
    mutating func blankPersonal() { token = "" }
}
