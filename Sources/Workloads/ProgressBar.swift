import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A one-line progress bar with rate and ETA on stderr; silent unless enabled (by default, when stdout and stderr
/// are terminals).
///
/// `Sendable`: the time of the last draw sits behind a `Mutex`, so concurrent tasks may report progress.
public final class ProgressBar: Sendable {
    public let label: String
    public let total: Int
    private let start = Date()
    private let lastDraw = Mutex(Date.distantPast)
    private let enabled: Bool

    /// Whether stdout and stderr are both terminals: when progress is drawn by default.
    public static let isTerminal = isatty(STDERR_FILENO) == 1 && isatty(STDOUT_FILENO) == 1

    /// A count or rate for people: 950, 12.3k, 1.25M.
    public static func count(_ value: Double) -> String {
        if value >= 1_000_000 { return String(format: "%.2fM", value / 1_000_000) }
        if value >= 10_000 { return String(format: "%.1fk", value / 1000) }
        return String(format: "%.0f", value)
    }

    public init(_ label: String, total: Int, enabled: Bool = ProgressBar.isTerminal) {
        self.label = label
        self.total = max(total, 1)
        self.enabled = enabled
    }

    public func update(_ done: Int) {
        guard enabled else { return }
        let now = Date()
        let due = lastDraw.withLock { last in
            guard now.timeIntervalSince(last) > 0.1 || done >= total else { return false }
            last = now
            return true
        }
        guard due else { return }
        let fraction = min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let elapsed = now.timeIntervalSince(start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let text = String(
            format: "\r\u{1B}[2K%@ %@ %3.0f%%  %@/s  ETA %.0fs ", label, bar, fraction * 100, Self.count(rate), eta)
        FileHandle.standardError.write(Data(text.utf8))
    }

    public func finish() { Self.clear(enabled: enabled) }

    /// Replaces the progress line with `text` (what is being done, when there is no count to show).
    public static func note(_ text: String, enabled: Bool = ProgressBar.isTerminal) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(text)".utf8))
    }

    /// Clears the progress line.
    public static func clear(enabled: Bool = ProgressBar.isTerminal) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
