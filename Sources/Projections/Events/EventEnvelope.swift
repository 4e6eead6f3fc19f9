import EventLog
import Foundation

/// An event with its envelope, in the canonical JSON Lines form that `export` writes and `import` reads:
/// `{"position":12,"id":"…","time":"2026-11-20T09:30:00.000Z","actor":"u1","type":"MessageSent","stream":"room:r9","data":{…}}`.
///
/// Everything but `type` and `data` is optional on input: a missing id is generated when appended, a missing
/// actor or stream is derived from the payload (and the state, for the few events whose payload does not name it).
public struct EventEnvelope: Sendable, Hashable, Codable {
    /// The log position, when the event came from the log.
    public var position: Position?
    /// The event id; nil means "generate one".
    public var id: EventID?
    /// Milliseconds since the epoch; nil means "now".
    public var time: Int64?
    /// Who did it; nil means "derive from the payload".
    public var actor: String?
    /// The stream; nil means "derive from the payload".
    public var stream: String?
    /// The event itself.
    public var event: DomainEvent

    /// The event type name.
    public var type: String { event.typeName }

    /// Makes a value from its fields.
    public init(
        event: DomainEvent, id: EventID? = nil, time: Int64? = nil, actor: String? = nil, stream: String? = nil,
        position: Position? = nil
    ) {
        self.event = event
        self.id = id
        self.time = time
        self.actor = actor
        self.stream = stream
        self.position = position
    }

    /// Decodes a record read from the log, its personal fields opened with their owner's key in `keys` (the user
    /// its payload names, else the record's actor). When the key is gone (the owner was erased) or `keys` is nil,
    /// the fields stay empty and ``DomainEvent/isSealed`` is true: JSON shows `"erased":true` in their place.
    /// - Throws: ``ValidationError/Code/undecodable`` or ``ValidationError/Code/unknownEventType``.
    public init(record: Record, keys: (any KeyStore)?) throws(ValidationError) {
        var event = try DomainEvent.decode(type: record.type, payload: record.payload)
        if let keys { event = event.opened(with: PersonalKeys(keys), owner: UserID(record.actor)) }
        self.init(
            event: event, id: record.id,
            time: record.time, actor: record.actor, stream: record.stream.rawValue, position: record.position)
    }

    enum CodingKeys: String, CodingKey { case position, id, time, actor, type, stream, data }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        position = try c.decodeIfPresent(UInt64.self, forKey: .position).map { Position($0) }
        if let text = try c.decodeIfPresent(String.self, forKey: .id) {
            guard let id = EventID(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .id, in: c, debugDescription: "'\(text)' is not a UUID or 32 hex digits")
            }
            self.id = id
        } else {
            id = nil
        }
        time = try c.decodeTimeIfPresent(forKey: .time)
        actor = try c.decodeIfPresent(String.self, forKey: .actor)
        stream = try c.decodeIfPresent(String.self, forKey: .stream)
        let type = try c.decode(String.self, forKey: .type)
        event = try DomainEvent.decodeData(type: type, from: c)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(position?.rawValue, forKey: .position)
        try c.encodeIfPresent(id?.description, forKey: .id)
        try c.encodeIfPresent(time.map(Timestamp.format), forKey: .time)
        try c.encodeIfPresent(actor, forKey: .actor)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(stream, forKey: .stream)
        try event.encodeData(to: &c)
    }

    /// The canonical JSON line (no trailing newline), keys in the order
    /// position, id, time, actor, type, stream, data; `data`'s keys sorted.
    public func jsonLine() -> String {
        var parts: [String] = []
        if let position { parts.append("\"position\":\(position.rawValue)") }
        if let id { parts.append("\"id\":" + JSONText.quote(id.description)) }
        if let time { parts.append("\"time\":" + JSONText.quote(Timestamp.format(time))) }
        if let actor { parts.append("\"actor\":" + JSONText.quote(actor)) }
        parts.append("\"type\":" + JSONText.quote(type))
        if let stream { parts.append("\"stream\":" + JSONText.quote(stream)) }
        parts.append("\"data\":" + dataJSON())
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// The `data` object alone, keys sorted.
    public func dataJSON() -> String {
        struct DataOnly: Encodable {
            let event: DomainEvent
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: EventEnvelope.CodingKeys.self)
                try event.encodeData(to: &c)
            }
        }
        guard let bytes = try? JSONText.encodeBytes(DataOnly(event: event), pretty: false) else { return "{}" }
        // {"data":{...}} → {...}
        let text = String(decoding: bytes, as: UTF8.self)
        return String(text.dropFirst("{\"data\":".count).dropLast())
    }

    /// Parses one JSON line as read from a file: a trailing carriage return (a CRLF file) and surrounding
    /// whitespace are ignored; bytes that are not UTF-8 are refused, never replaced with U+FFFD.
    /// - Throws: ``ValidationError/Code/invalidUTF8`` with the byte offset, or ``ValidationError/Code/undecodable``.
    public init(jsonLine bytes: some Collection<UInt8>) throws(ValidationError) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ValidationError(
                .invalidUTF8,
                "the line is not valid UTF-8 (byte \(JSONText.firstInvalidUTF8(bytes) + 1) of the line): save the file "
                    + "as UTF-8")
        }
        try self.init(jsonLine: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Parses one JSON line.
    /// - Throws: ``ValidationError/Code/undecodable`` naming what is wrong.
    public init(jsonLine: String) throws(ValidationError) {
        do {
            self = try JSONDecoder().decode(EventEnvelope.self, from: Data(jsonLine.utf8))
        } catch let error as DecodingError {
            // The decoder calls a number that does not fit its field "not valid JSON", without a path: find it.
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty,
                let misfit = JSONText.misfitNumber(in: jsonLine)
            {
                throw ValidationError(.undecodable, misfit)
            }
            throw ValidationError(.undecodable, JSONText.describe(error))
        } catch {
            throw ValidationError(.undecodable, "\(error)")
        }
    }
}

extension ValidationError.Code {
    /// A line of an input file that is not valid UTF-8.
    public static let invalidUTF8 = Self("invalidUTF8")
    /// A line of an input file longer than any event can be (``EventEnvelope/maximumLineLength``).
    public static let lineTooLong = Self("lineTooLong")
}

extension EventEnvelope {
    /// The longest JSON line read as one event: 8 MiB. A record is at most 1 MiB in the log, and escaping can
    /// make its JSON a few times longer; a longer line cannot be an event and is refused without being buffered.
    public static let maximumLineLength = 8 << 20
}

/// Small JSON text helpers shared by the envelope and the query results.
public enum JSONText {
    /// `value` as JSON text: keys sorted, slashes left alone, pretty-printed unless `pretty` is false. The one JSON
    /// writer for reports and CLI output.
    public static func encode(_ value: some Encodable, pretty: Bool = true) throws -> String {
        String(decoding: try encodeBytes(value, pretty: pretty), as: UTF8.self)
    }

    /// `value` as the UTF-8 bytes of ``encode(_:pretty:)``.
    public static func encodeBytes(_ value: some Encodable, pretty: Bool = true) throws -> Data {
        try (pretty ? prettyEncoder : compactEncoder).encode(value)
    }

    // One of each, shared: their options never change after this, and making one per call costs more than
    // encoding a small value.
    private static let prettyEncoder = encoder([.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    private static let compactEncoder = encoder([.sortedKeys, .withoutEscapingSlashes])

    private static func encoder(_ formatting: JSONEncoder.OutputFormatting) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return encoder
    }

    /// A JSON string literal for `text`.
    public static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20:
                let hex = String(s.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The 0-based offset of the first byte of `bytes` that does not belong to a valid UTF-8 sequence.
    package static func firstInvalidUTF8(_ bytes: some Collection<UInt8>) -> Int {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return offset
            }
        }
    }

    /// In valid JSON, the first number no field can hold: a position that is not a whole number from 0 to
    /// 2^64 − 1, or any other number (but a coordinate) that is not a whole number that fits 64 bits; nil when
    /// the text is not JSON or has no such number.
    static func misfitNumber(in text: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return nil }
        func find(_ value: Any, _ path: [String]) -> String? {
            switch value {
            case let object as [String: Any]:
                for key in object.keys.sorted() {
                    if let value = object[key], let found = find(value, path + [key]) { return found }
                }
            case let array as [Any]:
                for (index, element) in array.enumerated() {
                    if let found = find(element, path.dropLast() + [(path.last ?? "") + "[\(index)]"]) { return found }
                }
            case let number as NSNumber:
                let text = number.stringValue
                let at = path.joined(separator: ".")
                if path == ["position"], UInt64(text) == nil {
                    return
                        "at 'position': \(text) is not a log position (a whole number from 1 to 18446744073709551615)"
                }
                if ["lat", "lon"].contains(path.last), number.doubleValue.isFinite { return nil }
                if Int64(text) == nil, UInt64(text) == nil {
                    return "at '\(at)': \(text) is not a whole number that fits in 64 bits"
                }
            default:
                break
            }
            return nil
        }
        return find(object, [])
    }

    /// A decoding error as one line that names the field: `missing field 'name' in location`.
    public static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context.codingPath)
            return "missing field '\(key.stringValue)'" + (at.isEmpty ? "" : " in \(at)")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at '\(path(context.codingPath))': \(context.debugDescription)"
        case .dataCorrupted(let context):
            let at = path(context.codingPath)
            return (at.isEmpty ? "" : "at '\(at)': ") + context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }
}

extension EventEnvelope {
    /// This envelope with its event's seal opened with `keys` (see ``init(record:keys:)``).
    public func opened(with keys: any KeyStore) -> EventEnvelope {
        var copy = self
        copy.event = event.opened(with: PersonalKeys(keys), owner: actor.map { UserID($0) })
        return copy
    }

    /// Whether the event is `user`'s own act (its actor) or names them (a request to them, an invitation, a room
    /// they are added to): what their own export holds (GDPR Art. 15 and 20).
    public func isByOrAbout(_ user: UserID) -> Bool {
        if let actor, actor.isSameID(as: user.rawValue) { return true }
        if stream == "user:" + user.rawValue { return true }
        return event.namedUsers.contains { $0.rawValue.isSameID(as: user.rawValue) }
    }
}

extension DomainEvent {
    /// Every user id the payload names (its fields of type ``UserID`` and lists of them).
    var namedUsers: [UserID] {
        var found: [UserID] = []
        for child in Mirror(reflecting: payload).children {
            if let user = child.value as? UserID {
                found.append(user)
            } else if let users = child.value as? [UserID] {
                found += users
            }
        }
        return found
    }
}
