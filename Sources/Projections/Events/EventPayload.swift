/// What every event payload in the catalogue is: a Codable JSON form whose keys are the catalogue's
/// field names, and a compact binary form for the log that starts with the payload's schema version.
public protocol EventPayload: Sendable, Hashable, Codable {
    /// The event type name stored in the log (`MessageSent`, ...).
    static var typeName: String { get }
    /// The schema version this build writes. Older versions keep decoding.
    static var schemaVersion: UInt8 { get }
    /// The binary form: the schema version byte, then the fields.
    func encoded() -> [UInt8]
}

/// The binary codec of a payload (internal: the byte reader and writer are not API).
protocol BinaryPayload: EventPayload {
    /// Writes the fields after the version byte.
    func write(to writer: inout ByteWriter)
    /// Reads the fields written by `write(to:)` at schema `version`.
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError)
}

extension BinaryPayload {
    /// The binary form: the schema version byte, then the fields.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 48)
        writer.byte(Self.schemaVersion)
        write(to: &writer)
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) throws(ByteReaderError) -> Self {
        try ByteReader.reading(bytes) { (reader: inout ByteReader) throws(ByteReaderError) -> Self in
            let version = try reader.byte()
            guard version >= 1, version <= schemaVersion else {
                throw ByteReaderError(description: "\(typeName) schema version \(version) is not one this build reads")
            }
            return try Self(reading: &reader, version: version)
        }
    }
}

/// How a user signed up.
public enum RegistrationMethod: String, Sendable, Hashable, Codable, CaseIterable {
    case phone, email, google, `import`
}

/// A chat room's kind. `RoomCreated` makes `direct` and `group` rooms; `ActivityHosted` makes `activity` rooms.
public enum RoomKind: String, Sendable, Hashable, Codable, CaseIterable {
    case direct, group, activity
}

/// A chat message's kind.
public enum MessageKind: String, Sendable, Hashable, Codable, CaseIterable {
    case text, image, video
}

/// An activity's kind (a WagChat walk is `walk`).
public enum ActivityKind: String, Sendable, Hashable, Codable, CaseIterable {
    case party, walk, gameNight, other
}

/// A guest's answer to an invitation.
public enum RSVPAnswer: String, Sendable, Hashable, Codable, CaseIterable {
    case going, maybe, declined
}

/// An enum stored in payloads and snapshots as one byte: an explicit code per case, written once and never
/// changed, so that reordering or adding cases never changes what stored bytes mean. A new case takes the next
/// unused code.
protocol StoredEnum: CaseIterable, Equatable {
    /// This case's stored code.
    var storedCode: UInt8 { get }
}

extension RegistrationMethod: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .phone: 0
        case .email: 1
        case .google: 2
        case .import: 3
        }
    }
}

extension RoomKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .direct: 0
        case .group: 1
        case .activity: 2
        }
    }
}

extension MessageKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .text: 0
        case .image: 1
        case .video: 2
        }
    }
}

extension ActivityKind: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .party: 0
        case .walk: 1
        case .gameNight: 2
        case .other: 3
        }
    }
}

extension RSVPAnswer: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .going: 0
        case .maybe: 1
        case .declined: 2
        }
    }
}

extension GuestState: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .invited: 0
        case .going: 1
        case .maybe: 2
        case .declined: 3
        }
    }
}

extension ByteWriter {
    mutating func rawEnum<E: StoredEnum>(_ value: E) { byte(value.storedCode) }
}

extension ByteReader {
    mutating func rawEnum<E: StoredEnum>(_ type: E.Type) throws(ByteReaderError) -> E {
        let code = try byte()
        guard let value = E.allCases.first(where: { $0.storedCode == code }) else {
            throw ByteReaderError(description: "unknown \(E.self) value \(code) at byte \(offset - 1)")
        }
        return value
    }
}
