import NIOCore

extension Duration {
    /// Whole nanoseconds, clamped to `Int64` (what NATS's JSON and NIO's timers take).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    init(nanoseconds: Int64) {
        self = .nanoseconds(nanoseconds)
    }

    var timeAmount: TimeAmount { .nanoseconds(nanoseconds) }

    /// "250 ms", "5 s": for messages.
    var shortDescription: String {
        let nanos = nanoseconds
        if nanos % 1_000_000_000 == 0 { return "\(nanos / 1_000_000_000) s" }
        if nanos % 1_000_000 == 0 { return "\(nanos / 1_000_000) ms" }
        return "\(Double(nanos) / 1e9) s"
    }
}
