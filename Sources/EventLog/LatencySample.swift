#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The latencies and wall time of one measured benchmark run, shared by `parley bench` and the peer comparison
/// (`Benchmarks/`) so that both compute rates and percentiles the same way. Not API: only code that opts into
/// the `Benchmarking` SPI sees it.
@_spi(Benchmarking) public struct LatencySample: Sendable {
    /// Events (or queries, or commands) done.
    public var events: Int
    /// Wall time of the run.
    public var seconds: Double
    /// Each call's latency in nanoseconds, in no particular order.
    public var latencies: [UInt64]

    /// Makes a value from its fields.
    public init(events: Int, seconds: Double, latencies: [UInt64] = []) {
        self.events = events
        self.seconds = seconds
        self.latencies = latencies
    }

    /// Events per second of wall time.
    public var eventsPerSecond: Double { Double(events) / max(seconds, 1e-9) }

    /// The `fraction` quantile of the latencies in microseconds (nearest rank on the sorted values); 0 when there
    /// are none.
    public func percentileMicros(_ fraction: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return Double(sorted[min(max(rank, 0), sorted.count - 1)]) / 1_000
    }

    /// Adds `other`'s events, time and latencies to this one (a run measured in chunks).
    public mutating func add(_ other: LatencySample) {
        events += other.events
        seconds += other.seconds
        latencies += other.latencies
    }

    /// Nanoseconds on the monotonic clock.
    @inline(__always) public static func now() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Seconds since `start` (a value of ``now()``).
    public static func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

    /// User + system CPU seconds of this process (all its threads), or of the calling thread alone.
    public static func cpuSeconds(thread: Bool = false) -> Double {
        var usage = rusage()
        #if os(Linux)
            // RUSAGE_THREAD (1) is Linux's and is not exported without _GNU_SOURCE.
            getrusage(__rusage_who_t(thread ? 1 : RUSAGE_SELF.rawValue), &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number (for metrics, logs and messages).
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
