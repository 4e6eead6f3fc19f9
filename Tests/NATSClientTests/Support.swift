import NATSClient

/// Retries `body` while JetStream says what passes (no leader yet, no answer, a dropped connection), for at most
/// `limit`; other errors, and the last one, are thrown.
func retryingWhileUnavailable<Value>(
    for limit: Duration = .seconds(20), _ body: () async throws -> Value
) async throws -> Value {
    let deadline = ContinuousClock.now + limit
    while true {
        do {
            return try await body()
        } catch let error as JetStreamError
            where [.timeout, .noResponders, .connection].contains(error.code) && ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// `count` bytes that start with `sequence` in decimal, so a message names its place.
func payload(_ sequence: Int, size: Int = 16) -> [UInt8] {
    var bytes = Array("m\(sequence).".utf8)
    while bytes.count < size { bytes.append(UInt8(truncatingIfNeeded: bytes.count &* 7)) }
    return bytes
}
