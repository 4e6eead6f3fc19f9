import Foundation
import Projections

extension Loose {
    /// Why a value in an export is not a time, said so that a user can find it and fix it.
    struct InvalidTime: Error, Hashable {
        var reason: String
    }

    /// The one reader of times in exports, whatever app or tool wrote them.
    ///
    /// Reads milliseconds or seconds since the epoch (told apart by size: below 10^11 a value is seconds, as
    /// 10^11 ms is 1973 and 10^11 s the year 5138), as a number or as text; an ISO 8601 UTC text; and the
    /// timestamp objects Firestore tools write: the Admin SDK's JSON `{"_seconds":…,"_nanoseconds":…}`, the
    /// client SDKs' and protobuf's `{"seconds":…,"nanoseconds"|"nanos":…}`, node-firestore-import-export's
    /// `{"__datatype__":"timestamp","value":…}` (the value one of those objects or, from older versions, an ISO
    /// text) and Firefoo's `{"__time__":"…"}`. The REST export's `timestampValue` reaches it as its ISO text.
    /// A timestamp object without nanoseconds is on a whole second; one without seconds is not a time.
    /// - Throws: ``InvalidTime`` naming what is wrong: a missing part, a part that is not a number, or a time
    ///   outside the years 0000–9999 that `parley export` can write.
    static func readTime(_ value: Any) throws(InvalidTime) -> Int64 {
        if let object = value as? [String: Any] { return try timeObject(object) }
        if let text = value as? String, let parsed = Timestamp.parse(text) { return parsed }
        guard value is String || value is NSNumber else {
            throw InvalidTime(reason: "\(describe(value)) is not a number, an ISO 8601 text or a timestamp object")
        }
        guard let number = double(value) else {
            throw InvalidTime(reason: "\(describe(value)) is neither an ISO 8601 UTC time nor a number")
        }
        guard number >= 0 else { throw InvalidTime(reason: "\(describe(value)) is before 1970") }
        let milliseconds =
            number < 100_000_000_000 ? Timestamp.milliseconds(seconds: number) : Timestamp.milliseconds(number)
        guard let milliseconds else { throw outOfRange(value) }
        return milliseconds
    }

    /// ``readTime(_:)``, or nil when the value is not a time.
    static func time(_ value: Any?) -> Int64? {
        guard let value else { return nil }
        return try? readTime(value)
    }

    private static func timeObject(_ object: [String: Any]) throws(InvalidTime) -> Int64 {
        if let kind = object["__datatype__"] {
            guard string(kind) == "timestamp" else {
                throw InvalidTime(reason: "a __datatype__ \(describe(kind)) object is not a timestamp")
            }
            guard let inner = object["value"], !(inner is NSNull) else {
                throw InvalidTime(reason: "a __datatype__ timestamp has no value")
            }
            if let text = inner as? String {
                guard let parsed = Timestamp.parse(text) else {
                    throw InvalidTime(reason: "its value '\(text)' is not an ISO 8601 UTC time")
                }
                return parsed
            }
            guard let seconds = inner as? [String: Any] else {
                throw InvalidTime(reason: "its value is neither {_seconds, _nanoseconds} nor an ISO 8601 text")
            }
            return try secondsObject(seconds)
        }
        if let text = object["__time__"] {
            guard let text = text as? String, let parsed = Timestamp.parse(text) else {
                throw InvalidTime(reason: "__time__ \(describe(text)) is not an ISO 8601 UTC time")
            }
            return parsed
        }
        return try secondsObject(object)
    }

    /// `{"_seconds":…,"_nanoseconds":…}` and its spellings.
    private static func secondsObject(_ object: [String: Any]) throws(InvalidTime) -> Int64 {
        guard let secondsKey = ["_seconds", "seconds"].first(where: { object[$0] != nil }) else {
            let keys = object.keys.sorted().joined(separator: ", ")
            throw InvalidTime(
                reason: "a timestamp object needs _seconds (or seconds), and this one has "
                    + (keys.isEmpty ? "no fields" : keys))
        }
        guard let seconds = object[secondsKey].flatMap(double) else {
            throw InvalidTime(reason: "\(secondsKey) \(describe(object[secondsKey] ?? NSNull())) is not a number")
        }
        var nanoseconds = 0.0
        var parts = "\(secondsKey) \(describe(object[secondsKey] ?? seconds))"
        if let nanosKey = ["_nanoseconds", "nanoseconds", "nanos"].first(where: { object[$0] != nil }) {
            guard let value = object[nanosKey].flatMap(double) else {
                throw InvalidTime(reason: "\(nanosKey) \(describe(object[nanosKey] ?? NSNull())) is not a number")
            }
            nanoseconds = value
            parts += " with \(nanosKey) \(describe(object[nanosKey] ?? value))"
        }
        guard let milliseconds = Timestamp.milliseconds(seconds: seconds, nanoseconds: nanoseconds) else {
            throw InvalidTime(reason: "\(parts) is outside the years 0000–9999")
        }
        return milliseconds
    }

    private static func outOfRange(_ value: Any) -> InvalidTime {
        InvalidTime(reason: "\(describe(value)) is outside the years 0000–9999")
    }
}

extension ImportPlan {
    /// An optional time field of the record at `path`: nil when absent; otherwise it must be a time, else a problem
    /// naming the field and what is wrong with it is recorded and `isValid` is false.
    mutating func time(_ field: (key: String, value: Any)?, in path: String) -> (value: Int64?, isValid: Bool) {
        guard let field else { return (nil, true) }
        do {
            return (try Loose.readTime(field.value), true)
        } catch {
            problems.append(
                ImportProblem(
                    path: path, code: "invalidTime", message: "\(path)/\(field.key) is not a time: \(error.reason)"))
            return (nil, false)
        }
    }
}
