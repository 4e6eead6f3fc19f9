import EventLog
import Foundation
import Projections

/// The formats `parley import` reads.
public enum ImportFormat: String, Sendable, CaseIterable {
    /// Canonical JSON Lines, one event per line (what `parley export` writes).
    case jsonl
    /// A Firebase Realtime Database JSON export, in the LikeMinds or the ChatApp shape.
    case firebaseRTDB = "firebase-rtdb"
    /// Firestore documents as JSON, in the WagChat shape (`users`, `chats` with a `thread`).
    case firestoreJSON = "firestore-json"

    /// Guesses the format from the file's bytes: JSON Lines when the first line is an event object, a
    /// Firestore export when ``firestoreMarker(in:)`` finds one of its marks, a Realtime Database export when the
    /// file is one other JSON object, JSON Lines otherwise (so that a bad line is reported with its number). A
    /// byte-order mark and a CRLF line end are ignored, and the first line is read whole, however long.
    public static func guess(_ data: Data) -> ImportFormat {
        let bytes = data.withoutByteOrderMark
        let lineEnd = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
        let firstLine = bytes[bytes.startIndex..<lineEnd]
        let first = try? JSONSerialization.jsonObject(with: Data(firstLine))
        if let object = first as? [String: Any], object["type"] is String { return .jsonl }
        let whole = lineEnd == bytes.endIndex ? first : try? JSONSerialization.jsonObject(with: Data(bytes))
        if let whole, firestoreMarker(in: whole) != nil { return .firestoreJSON }
        guard whole is [String: Any] else {
            // A pretty-printed document that does not parse (bad bytes, a syntax error) is still one document:
            // read as one, its error is about the document rather than about each of its lines.
            guard firstLine.allSatisfy({ [0x20, 0x09, 0x0D, UInt8(ascii: "{")].contains($0) }),
                firstLine.contains(UInt8(ascii: "{"))
            else { return .jsonl }
            let marks = [#""chats""#, #""Chats""#, #""__collections__""#, #""__datatype__""#, #""__time__""#]
            let isFirestore = marks.contains { bytes.range(of: Data($0.utf8)) != nil }
            return isFirestore ? .firestoreJSON : .firebaseRTDB
        }
        return .firebaseRTDB
    }

    /// What marks `root` as a Firestore export rather than a Realtime Database one, as a phrase for messages (`a
    /// Chats collection`); nil when nothing does. The marks: node-firestore-import-export's `__collections__`, the
    /// REST API's documents, and WagChat's chats collection in any case.
    static func firestoreMarker(in root: Any) -> String? {
        if let entries = root as? [Any] {
            let first = entries.first as? [String: Any]
            let document = (first?["document"] as? [String: Any]) ?? first
            return document.map(FirestoreExport.isRESTDocument) == true ? "REST API documents" : nil
        }
        guard let object = root as? [String: Any] else { return nil }
        if object[FirestoreExport.subCollectionsKey] != nil { return "a \(FirestoreExport.subCollectionsKey) envelope" }
        if object["documents"] is [Any] || FirestoreExport.isRESTDocument(object) { return "REST API documents" }
        if let chats = ExportRecord.key(matching: "chats", in: object.keys) { return "a \(chats) collection" }
        return nil
    }
}

extension Data {
    /// The bytes after a UTF-8 byte-order mark, if the data starts with one.
    public var withoutByteOrderMark: Data.SubSequence {
        starts(with: [0xEF, 0xBB, 0xBF]) ? self[(startIndex + 3)...] : self[...]
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
    /// Notes on how the file was read: what was not imported (collections, nodes, fields, each named), how
    /// values were read (display names matched to users).
    public var notes: [String] = []
    /// What the readers saw and did not import, named in ``notes`` once the file is read.
    var unimported = UnimportedParts()
    /// Who the users an export keys by phone number already are.
    var identities = ImportIdentities.none
    /// The opaque id each phone-number key of the file was given: one per key, for the whole file. Kept in memory
    /// only, for as long as the file is read.
    var personalIDs: [String: UserID] = [:]

    public init() {}

    mutating func add(_ event: DomainEvent, idKey: String, time: Int64?, line: Int? = nil, path: String? = nil) {
        items.append(
            Item(
                envelope: EventEnvelope(event: event, id: EventID.derived(from: idKey), time: time), line: line,
                path: path))
    }

    /// Puts the items from `start` on in time order, those without a time first, keeping the file's order among
    /// equal times (a room before its first message). An export's rooms then reach the log as their messages were
    /// sent, not room after room, and a room list, ordered by log position, shows them as the app did.
    mutating func orderByTime(from start: Int) {
        guard start < items.count else { return }
        let ordered = items[start...].enumerated().sorted {
            ($0.element.envelope.time ?? .min, $0.offset) < ($1.element.envelope.time ?? .min, $1.offset)
        }
        items.replaceSubrange(start..., with: ordered.map(\.element))
    }

    /// Reads a file in `format`; problems are collected, not thrown, so that all of them can be reported.
    /// `identities` says which users already here a phone number that keys a user in the file names (so that a file
    /// imported twice names the same users); a phone number no one has becomes a new opaque id.
    public static func read(_ data: Data, format: ImportFormat, identities: ImportIdentities = .none) -> ImportPlan {
        var plan = ImportPlan()
        plan.identities = identities
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            plan.problems.append(
                ImportProblem(code: "emptyFile", message: "the file is empty: there is nothing to import"))
            return plan
        }
        let data = Data(data.withoutByteOrderMark)
        switch format {
        case .jsonl: plan.readJSONLines(data)
        case .firebaseRTDB, .firestoreJSON:
            if let line = firstInvalidUTF8Line(data) {
                plan.problems.append(
                    ImportProblem(
                        code: "invalidUTF8",
                        message: "line \(line) is not valid UTF-8: save the export as UTF-8 (nothing was imported)"))
                return plan
            }
            guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
                plan.problems.append(
                    ImportProblem(
                        code: "notJSON",
                        message: "the file is not JSON (a \(format.rawValue) export is one JSON object)"))
                return plan
            }
            if format == .firestoreJSON {
                plan.readFirestore(object)
            } else if let root = object as? [String: Any] {
                plan.readRealtimeDatabase(root)
            } else {
                plan.problems.append(
                    ImportProblem(path: "/", code: "notAnObject", message: "the top level must be a JSON object"))
            }
        }
        plan.notes += plan.unimported.notes
        return plan
    }

    /// One event per line; a CRLF line end is read as LF, and each line must be UTF-8 on its own.
    private mutating func readJSONLines(_ data: Data) {
        var lineNumber = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            do {
                let envelope = try EventEnvelope(jsonLine: line)
                items.append(Item(envelope: envelope, line: lineNumber, path: nil))
            } catch {
                problems.append(ImportProblem(line: lineNumber, code: error.code.name, message: error.message))
            }
        }
    }

    /// The 1-based number of the first line holding bytes that are not UTF-8, or nil when all of it is UTF-8.
    private static func firstInvalidUTF8Line(_ data: Data) -> Int? {
        guard String(validating: data, as: UTF8.self) == nil else { return nil }
        let offset = JSONText.firstInvalidUTF8(data)
        return data.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
    }
}

/// Where an import finds the users that the phone numbers (or e-mail addresses) keying an export's users already
/// belong to.
///
/// An id is never erased, so it must not be personal data: an export that keys its users by phone number (LikeMinds)
/// has each such key replaced by an opaque id, and the phone kept as the user's phone, a sealed field. A phone that
/// already belongs to a user here (the same file imported again, or a person who signed up before) maps to that
/// user; any other to a new random id (`u-` and 20 hex digits), the same one for every mention in the file.
public struct ImportIdentities: Sendable {
    let existing: @Sendable (_ contact: String) -> UserID?

    /// `existing` answers the user whose phone (E.164) or e-mail is `contact`, or nil.
    public init(existing: @escaping @Sendable (_ contact: String) -> UserID?) {
        self.existing = existing
    }

    /// No user exists yet: every phone key becomes a new id.
    public static let none = ImportIdentities { _ in nil }

    /// The users `engine` holds.
    public static func users(of engine: Engine) -> ImportIdentities {
        ImportIdentities { contact in
            contact.contains("@")
                ? (try? engine.user(email: contact)) ?? nil : (try? engine.user(phone: contact)) ?? nil
        }
    }
}

extension ImportPlan {
    /// The id a user keyed `key` in the file has here: `key` itself, unless it is a phone number or an e-mail
    /// address (see ``ImportIdentities``).
    mutating func userID(forKey key: String) -> UserID {
        let id = UserID(key)
        guard id.looksLikePersonalData else { return id }
        if let mapped = personalIDs[key] { return mapped }
        let mapped = identities.existing(Self.contact(inKey: key)) ?? Self.newOpaqueUserID()
        personalIDs[key] = mapped
        return mapped
    }

    /// The phone (E.164, `+` added when the key lacks it) or e-mail a personal key is.
    static func contact(inKey key: String) -> String {
        key.contains("@") || key.hasPrefix("+") ? key : "+" + key
    }

    /// `u-` and 80 random bits in hex.
    static func newOpaqueUserID() -> UserID {
        var generator = SystemRandomNumberGenerator()
        let bits = (0..<10).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return UserID("u-" + bits.map { String($0, radix: 16).leftPadded(to: 2) }.joined())
    }

    /// Whether `key`, a user's id in an app whose ids are Firebase Auth uids, is a phone number or an e-mail: such a
    /// user is not imported (a problem says why); their rooms and messages then name an unknown user.
    mutating func refusePersonalID(_ key: String, at path: String) -> Bool {
        guard UserID(key).looksLikePersonalData else { return false }
        problems.append(
            ImportProblem(
                path: path, code: "personalDataAsID",
                message:
                    "\(path): user id '\(key)' is a phone number or an e-mail address, which an id must not be (an id "
                    + "is never erased); this app's ids are Firebase Auth uids: export the users under their uids"))
        return true
    }

    /// Says how many of the file's user keys were phone numbers or e-mails given other ids.
    mutating func notePersonalIDs(_ path: String) {
        guard !personalIDs.isEmpty else { return }
        notes.append(
            "\(path) keys \(personalIDs.count) user(s) by phone number or e-mail, which an id must not be: each has an "
                + "opaque id (a user already here with that phone keeps theirs), the phone kept sealed in the profile")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
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

    /// A whole number; nil when the value is not one that fits an `Int` (`1e30` is not Int64.min).
    static func int(_ value: Any?) -> Int? {
        switch value {
        case let number as NSNumber:
            if let exact = Int(number.stringValue) { return exact }
            let double = number.doubleValue
            guard double.isFinite, double.magnitude < 0x1p63 else { return nil }
            return Int(double.rounded(.towardZero))
        case let text as String: return Int(text)
        default: return nil
        }
    }

    /// A finite number; nil for anything else, NaN and infinities included (JSON cannot carry them back out).
    static func double(_ value: Any?) -> Double? {
        let number: Double?
        switch value {
        case let value as NSNumber: number = value.doubleValue
        case let text as String: number = Double(text)
        default: number = nil
        }
        guard let number, number.isFinite else { return nil }
        return number
    }

    /// A value as a message quotes it: text in quotes, a number as written, anything else by its kind.
    static func describe(_ value: Any) -> String {
        switch value {
        case let text as String: return "'\(text)'"
        case let number as NSNumber: return number.stringValue
        case is NSNull: return "null"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        default: return "not a number"
        }
    }
}

extension ImportPlan {
    /// An optional number field: nil when absent or null; when present it must be a finite number in `range`,
    /// else a problem naming its path is recorded and `isValid` is false.
    mutating func number(_ value: Any?, path: String, in range: ClosedRange<Double>) -> (
        value: Double?, isValid: Bool
    ) {
        bounded(
            value, path: path, in: range, read: Loose.double,
            expected: "a number from \(Self.bound(range.lowerBound)) to \(Self.bound(range.upperBound))")
    }

    /// An optional whole-number field, as ``number(_:path:in:)``.
    mutating func integer(_ value: Any?, path: String, in range: ClosedRange<Int>) -> (value: Int?, isValid: Bool) {
        bounded(
            value, path: path, in: range, read: Loose.int,
            expected: "a whole number from \(range.lowerBound) to \(range.upperBound)")
    }

    /// `value` read by `read` and checked against `range`; a problem saying it must be `expected` otherwise.
    private mutating func bounded<T: Comparable>(
        _ value: Any?, path: String, in range: ClosedRange<T>, read: (Any) -> T?, expected: String
    ) -> (value: T?, isValid: Bool) {
        guard let value, !(value is NSNull) else { return (nil, true) }
        guard let number = read(value), range.contains(number) else {
            problems.append(
                ImportProblem(
                    path: path, code: "invalidNumber",
                    message: "\(path) is \(Loose.describe(value)): it must be \(expected)"))
            return (nil, false)
        }
        return (number, true)
    }

    private static func bound(_ value: Double) -> String {
        value == value.rounded() && value.magnitude < 1e15 ? String(Int(value)) : String(value)
    }
}
