import EventLog
import Foundation

/// The formats `parley import` reads.
public enum ImportFormat: String, Sendable, CaseIterable {
    /// Canonical JSON Lines, one event per line (what `parley export` writes).
    case jsonl
    /// A Firebase Realtime Database JSON export, in the LikeMinds or the ChatApp shape.
    case firebaseRTDB = "firebase-rtdb"
    /// Firestore documents as JSON, in the WagChat shape (`users`, `chats` with a `thread`).
    case firestoreJSON = "firestore-json"

    /// Guesses the format from the file's bytes: JSON Lines when the first line is an event object, a
    /// Firestore export when there is a `chats` collection, a Realtime Database export otherwise.
    public static func guess(_ data: Data) -> ImportFormat {
        let text = String(decoding: data.prefix(1 << 16), as: UTF8.self)
        let firstLine = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: true).first ?? ""
        if firstLine.trimmingCharacters(in: .whitespaces).hasPrefix("{"), firstLine.contains("\"type\""),
            (try? JSONSerialization.jsonObject(with: Data(firstLine.utf8))) != nil
        {
            return .jsonl
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return .jsonl }
        if object["chats"] != nil || object["__collections__"] != nil { return .firestoreJSON }
        return .firebaseRTDB
    }
}

/// One thing wrong with an import file, with where it is: a line number or a JSON path.
public struct ImportProblem: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line number (JSON Lines), or nil.
    public var line: Int?
    /// JSON path in a Firebase export (`Messages/room1/-Nx1`), or nil.
    public var path: String?
    /// The rule broken, as a code (`undecodable`, `userNotFound`, ...).
    public var code: String
    public var message: String

    public init(line: Int? = nil, path: String? = nil, code: String, message: String) {
        self.line = line
        self.path = path
        self.code = code
        self.message = message
    }

    /// Where the problem is, as a user reads it.
    public var location: String {
        if let line { return "line \(line)" }
        if let path { return path }
        return "file"
    }

    public var description: String { "\(location): \(message)" }
}

/// What an import file turned into: events in order (each with where it came from), the problems found while
/// reading it, and the denormalised copies to check against the engine's own answers after import.
public struct ImportPlan: Sendable {
    public struct Item: Sendable {
        public var envelope: EventEnvelope
        /// Line number or JSON path, for error messages.
        public var line: Int?
        public var path: String?
    }

    public var items: [Item] = []
    public var problems: [ImportProblem] = []
    /// Denormalised "last message" bodies per room (Firebase `ChatRooms`): checked, never imported.
    public var expectedLastMessages: [RoomID: String] = [:]
    /// Denormalised room lists per user (`UsersChatRooms`, `user-messages`): checked, never imported.
    public var expectedRoomsByUser: [UserID: Set<RoomID>] = [:]
    /// Notes on how the file was read (time units guessed, fields ignored).
    public var notes: [String] = []

    public init() {}

    mutating func add(_ event: DomainEvent, idKey: String, time: Int64?, line: Int? = nil, path: String? = nil) {
        items.append(
            Item(
                envelope: EventEnvelope(event: event, id: EventID.derived(from: idKey), time: time), line: line,
                path: path))
    }

    /// Reads a file in `format`; problems are collected, not thrown, so that all of them can be reported.
    public static func read(_ data: Data, format: ImportFormat) -> ImportPlan {
        var plan = ImportPlan()
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            plan.problems.append(
                ImportProblem(code: "emptyFile", message: "the file is empty: there is nothing to import"))
            return plan
        }
        switch format {
        case .jsonl: plan.readJSONLines(data)
        case .firebaseRTDB, .firestoreJSON:
            guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
                plan.problems.append(
                    ImportProblem(
                        code: "notJSON",
                        message: "the file is not JSON (a \(format.rawValue) export is one JSON object)"))
                return plan
            }
            guard let root = object as? [String: Any] else {
                plan.problems.append(
                    ImportProblem(path: "/", code: "notAnObject", message: "the top level must be a JSON object"))
                return plan
            }
            if format == .firebaseRTDB {
                plan.readRealtimeDatabase(root)
            } else {
                plan.readFirestore(root)
            }
        }
        return plan
    }

    private mutating func readJSONLines(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        var lineNumber = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { continue }
            do {
                let envelope = try EventEnvelope(jsonLine: trimmed)
                items.append(Item(envelope: envelope, line: lineNumber, path: nil))
            } catch {
                problems.append(ImportProblem(line: lineNumber, code: error.code.name, message: error.message))
            }
        }
    }
}

/// Reading loosely typed JSON values from Firebase exports.
enum Loose {
    static func string(_ value: Any?) -> String? {
        switch value {
        case let text as String: return text
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }

    static func int(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber: return number.intValue
        case let text as String: return Int(text)
        default: return nil
        }
    }

    static func double(_ value: Any?) -> Double? {
        switch value {
        case let number as NSNumber: return number.doubleValue
        case let text as String: return Double(text)
        default: return nil
        }
    }

    /// A time in an export: milliseconds or seconds since the epoch (told apart by size), an ISO 8601 string,
    /// or a Firestore timestamp object (`{"_seconds":…,"_nanoseconds":…}` or `{"seconds":…,"nanos":…}`).
    static func time(_ value: Any?) -> Int64? {
        if let object = value as? [String: Any] {
            guard let seconds = double(object["_seconds"] ?? object["seconds"]) else { return nil }
            let nanos = double(object["_nanoseconds"] ?? object["nanos"] ?? object["nanoseconds"]) ?? 0
            return Int64(seconds * 1000 + nanos / 1_000_000)
        }
        if let text = value as? String, let parsed = Timestamp.parse(text) { return parsed }
        guard let number = double(value), number.isFinite, number >= 0 else { return nil }
        // Below 10^11 a value is seconds (10^11 ms is 1973; 10^11 s is the year 5138).
        return number < 100_000_000_000 ? Int64(number * 1000) : Int64(number)
    }
}
