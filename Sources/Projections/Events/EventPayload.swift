/// What every event payload in the catalogue is: a Codable JSON form whose keys are the catalogue's
/// field names, and a compact binary form for the log that starts with the payload's schema version.
///
/// Each payload type declares everything about its event in one place, in its feature folder
/// (`Chat/ChatEvents.swift`, ...): its name, stable code, stream, actor, binary codec and JSON form.
/// `DomainEvent.eventTypes` lists them, by code.
public protocol EventPayload: Sendable, Hashable, Codable {
    /// The event type name stored in the log (`MessageSent`, ...).
    static var typeName: String { get }
    /// The event type's stable code: its index in `DomainEvent.eventTypes` (and in ``DomainEvent/typeNames``),
    /// which projections and snapshots use. A code is never changed or reused; a new type takes the next one.
    static var code: Int { get }
    /// The schema version this build writes. Older versions keep decoding.
    static var schemaVersion: UInt8 { get }
    /// The stream the event belongs to (DESIGN.md §3): `user:<acting user>`, `room:<id>`, `activity:<id>` or
    /// `feelings`.
    var stream: String { get }
    /// The actor named by the payload itself, or nil when only the state knows it (the sender of an edited
    /// message, the host of an activity); `system` for feelings.
    var payloadActor: String? { get }
    /// This payload as a ``DomainEvent``.
    var event: DomainEvent { get }
    /// The binary form: the schema version byte, then the fields.
    func encoded() -> [UInt8]
}

/// The binary codec of a payload (internal: the byte reader and writer are not API).
protocol BinaryPayload: EventPayload {
    /// Writes the fields after the version byte.
    func write(to writer: inout ByteWriter)
    /// Reads the fields written by `write(to:)` at schema `version`.
    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError)
    /// Reads a sealed payload after its marker (`PersonalFields.swift`); a type without personal fields refuses it.
    static func readSealedPayload(_ reader: inout ByteReader) throws(ByteReaderError) -> Self
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
            try read(&reader)
        }
    }

    /// Decodes bytes that stay valid during the call (a record read in place, without a copy).
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(ByteReaderError) -> Self {
        try ByteReader.reading(bytes) { (reader: inout ByteReader) throws(ByteReaderError) -> Self in
            try read(&reader)
        }
    }

    static func readSealedPayload(_ reader: inout ByteReader) throws(ByteReaderError) -> Self {
        throw ByteReaderError(description: "\(typeName) has no personal fields, yet its payload is sealed")
    }

    private static func read(_ reader: inout ByteReader) throws(ByteReaderError) -> Self {
        let version = try reader.byte()
        if version == sealedPayloadMarker { return try readSealedPayload(&reader) }
        guard version >= 1, version <= schemaVersion else {
            throw ByteReaderError(description: "\(typeName) schema version \(version) is not one this build reads")
        }
        return try Self(reading: &reader, version: version)
    }
}

/// An enum stored in payloads and snapshots as one byte: an explicit code per case, written once and never
/// changed, so that reordering or adding cases never changes what stored bytes mean. A new case takes the next
/// unused code.
protocol StoredEnum: CaseIterable, Equatable {
    /// This case's stored code.
    var storedCode: UInt8 { get }
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
