/// How ParleyKit tries a call again: how many attempts at most, and how long it waits between them.
///
/// A command is retried with the same `Idempotency-Key`, so the server appends it once however many attempts
/// reach it. Transport failures, 503 (the server is stopping or its store failed) and 429 (waiting at least the
/// server's `Retry-After`) are retried; any other refusal is final.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts per call, the first included (at least 1).
    public var maxAttempts: Int
    /// The wait before the second attempt; it doubles with each attempt after that.
    public var initialDelay: Duration
    /// The longest wait between two attempts (a longer `Retry-After` is still honoured).
    public var maxDelay: Duration

    /// A policy of `maxAttempts` attempts, waiting from `initialDelay` up to `maxDelay` between them.
    public init(maxAttempts: Int = 6, initialDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The default: six attempts, 0.1 s doubling to at most 5 s between them.
    public static var standard: RetryPolicy { RetryPolicy() }

    /// The wait after `failures` consecutive failed attempts (1 for the first): exponential, capped, with jitter
    /// (between half and all of it) so that many clients cut off together do not come back together.
    func delay(afterFailures failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 30)
        let uncapped = initialDelay * (1 << exponent)
        let capped = uncapped > maxDelay || uncapped < .zero ? maxDelay : uncapped
        return capped * Double.random(in: 0.5...1.0)
    }
}
