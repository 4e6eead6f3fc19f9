import Foundation
import Projections

/// One object of an export (a Firestore document, a Realtime Database node) read by its field names as the apps
/// spelled them.
///
/// A name matches exactly first, then ignoring case, and a reader lists a field's known variants in the order it
/// prefers them (`senderName`, `senderUsername`). Every field read is remembered, so that the import report can
/// name the ones no reader took (``ImportPlan/finish(_:)``): nothing in an export is dropped without a word.
struct ExportRecord {
    /// Where the record is (`Chats/c1/thread/t1`), for problems.
    let path: String
    /// The path with its keys as `*` (`Chats/*/thread/*`), for the report.
    let pattern: String
    let fields: [String: Any]
    private var readKeys: Set<String> = []

    init(_ fields: [String: Any], path: String, pattern: String) {
        self.fields = fields
        self.path = path
        self.pattern = pattern
    }

    /// The first of `names` the record holds, with its key as spelled in the export; nil when it holds none.
    mutating func field(_ names: String...) -> (key: String, value: Any)? { field(names) }

    /// ``field(_:)-(String...)`` for a list of names.
    mutating func field(_ names: [String]) -> (key: String, value: Any)? {
        for name in names {
            if let value = fields[name] {
                readKeys.insert(name)
                return (name, value)
            }
        }
        for name in names {
            if let key = Self.key(matching: name, in: fields.keys) {
                readKeys.insert(key)
                return (key, fields[key] ?? NSNull())
            }
        }
        return nil
    }

    /// The value of ``field(_:)-(String...)``.
    mutating func value(_ names: String...) -> Any? { field(names)?.value }

    /// The value of ``field(_:)-(String...)`` as text (a number as written); nil when absent or not text.
    mutating func string(_ names: String...) -> String? { Loose.string(field(names)?.value) }

    /// The keys no reader took, sorted.
    var unreadKeys: [String] { fields.keys.filter { !readKeys.contains($0) }.sorted() }

    /// The key among `keys` that is `name` ignoring case (the first in sorted order when several are), or nil.
    static func key(matching name: String, in keys: some Collection<String>) -> String? {
        keys.filter { $0.caseInsensitiveCompare(name) == .orderedSame }.min()
    }

    /// Whether `key` is `name` ignoring case.
    static func matches(_ key: String, _ name: String) -> Bool { key.caseInsensitiveCompare(name) == .orderedSame }
}

/// What the readers saw in an export and did not import, gathered by kind so that the report names each kind once,
/// with how often it occurred and where it first did.
struct UnimportedParts: Sendable {
    private var kinds: [String: (count: Int, first: String)] = [:]

    /// Counts one occurrence of `kind` (`Chats/*/thread/*/id`) at `path` (`Chats/c1/thread/t1/id`).
    mutating func add(_ kind: String, at path: String) {
        if let seen = kinds[kind] {
            kinds[kind] = (seen.count + 1, min(seen.first, path))
        } else {
            kinds[kind] = (1, path)
        }
    }

    /// One report line per kind, sorted: `not imported: Chats/*/thread/*/id (3 records, e.g. Chats/c1/thread/t1/id)`.
    var notes: [String] {
        kinds.keys.sorted().compactMap { kind in
            guard let seen = kinds[kind] else { return nil }
            let place = seen.count == 1 ? "at \(seen.first)" : "\(seen.count) records, e.g. \(seen.first)"
            return "not imported: \(kind) (\(place))"
        }
    }
}

extension ImportPlan {
    /// Names, in the report, every field of `record` that was not read.
    mutating func finish(_ record: ExportRecord) {
        for key in record.unreadKeys {
            unimported.add("\(record.pattern)/\(key)", at: "\(record.path)/\(key)")
        }
    }
}
