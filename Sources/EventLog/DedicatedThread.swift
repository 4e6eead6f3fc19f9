import Foundation

/// Runs blocking work — file I/O that may fsync, a wait on a thread or a lock held by one, a long fold — on a
/// thread of its own, and resumes the caller when it is done.
///
/// Swift's cooperative pool has one thread per core (two on a small machine): an async function that blocks
/// one of them stalls every task on the machine, an HTTP server's included. Every blocking call made from async
/// code goes through here (`.ci/lint-blocking` checks it). A thread is made per call: the callers are rare and
/// coarse (opening or closing a log, a digest of the whole state, a takeover), so a pool would buy nothing.
/// - Throws: what `body` throws.
public func onDedicatedThread<T: Sendable, Failure: Error>(
    _ name: String, _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result: Result<T, Failure> = await withCheckedContinuation { continuation in
        let thread = Thread {
            continuation.resume(returning: Result { () throws(Failure) -> T in try body() })
        }
        thread.name = name
        thread.start()
    }
    return try result.get()
}
