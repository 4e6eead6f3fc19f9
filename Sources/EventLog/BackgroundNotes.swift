/// What work done in the background (a snapshot, the actor index) could not do, kept for a caller to show: one line
/// per distinct failure, and at most ``limit`` lines. A failure that comes back updates its line (the newest
/// message, and how many times) instead of adding one, so a disk that stays full for days costs one line.
package struct BackgroundNotes: Sendable {
    /// Distinct failures kept; later ones are only counted.
    package static let limit = 16

    private struct Entry: Sendable {
        var key: String
        var text: String
        var count: Int
    }

    private var entries: [Entry] = []
    private var dropped = 0

    package init() {}

    /// Notes `text`. `key` names the failure without what changes from one try to the next (a position, a size):
    /// a note with a key already noted replaces that one's text and counts it again.
    package mutating func add(_ text: String, key: String) {
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].text = text
            entries[index].count += 1
        } else if entries.count < Self.limit {
            entries.append(Entry(key: key, text: text, count: 1))
        } else {
            dropped += 1
        }
    }

    /// The lines, oldest failure first.
    package var lines: [String] {
        entries.map { $0.count > 1 ? "\($0.text) (\($0.count) times)" : $0.text }
            + (dropped > 0 ? ["\(dropped) more background failures of other kinds were not kept"] : [])
    }

    /// The key of a failure of `what` with `error`: its code and errno, not its message (which names positions).
    package static func key(_ what: String, _ error: EventLogError) -> String {
        "\(what) \(error.code) \(error.errno ?? 0)"
    }
}
