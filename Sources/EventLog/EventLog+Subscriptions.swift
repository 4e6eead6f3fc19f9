import Synchronization

/// Wakes subscribers waiting for new commits.
package final class CommitNotifier: Sendable {
    private struct Waiters {
        var next = 0
        var continuations: [Int: CheckedContinuation<Void, Never>] = [:]
        var isClosed = false
        var generation: UInt64 = 0
    }

    private let waiters = PlainMutex(Waiters())

    package init() {}

    /// Suspends until a commit newer than `generation` happens (or the log closes, or the task is cancelled).
    package func wait(after generation: UInt64) async {
        let id = waiters.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = waiters.withLock { state -> Bool in
                    if state.isClosed || state.generation != generation || Task.isCancelled { return true }
                    state.continuations[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = waiters.withLock { $0.continuations.removeValue(forKey: id) }
            continuation?.resume()
        }
    }

    package var generation: UInt64 { waiters.withLock { $0.generation } }
    package var isClosed: Bool { waiters.withLock { $0.isClosed } }

    /// Suspends until `isPast()` holds (checked before each wait), the notifier closes, or the task is
    /// cancelled; false once closed. What `waitForCommit` and the engine's `waitForDurable` are built on.
    package func wait(until isPast: () -> Bool) async -> Bool {
        while true {
            let generation = self.generation
            if isPast() { return true }
            if isClosed { return false }
            if Task.isCancelled { return true }
            await wait(after: generation)
        }
    }

    package func notify() {
        let toResume = waiters.withLock { state in
            state.generation += 1
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in toResume { continuation.resume() }
    }

    package func close() {
        let toResume = waiters.withLock { state in
            state.isClosed = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in toResume { continuation.resume() }
    }
}

extension EventLog {
    /// Suspends until the committed head passes `position`, the log closes, or the task is cancelled; false
    /// when the log is closed. Subscriptions (``EventStore/subscribe(from:)``) wait here between reads.
    public func waitForCommit(after position: Position) async -> Bool {
        await notifier.wait { committedPosition > position.rawValue }
    }
}
