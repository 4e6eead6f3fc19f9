import Synchronization

/// Wakes subscribers waiting for new commits.
final class CommitNotifier: Sendable {
    private struct Waiters {
        var next = 0
        var continuations: [Int: CheckedContinuation<Void, Never>] = [:]
        var isClosed = false
        var generation: UInt64 = 0
    }

    private let waiters = Mutex(Waiters())

    /// Suspends until a commit newer than `generation` happens (or the log closes, or the task is cancelled).
    func wait(after generation: UInt64) async {
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

    var generation: UInt64 { waiters.withLock { $0.generation } }
    var isClosed: Bool { waiters.withLock { $0.isClosed } }

    func notify() {
        let toResume = waiters.withLock { state in
            state.generation += 1
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in toResume { continuation.resume() }
    }

    func close() {
        let toResume = waiters.withLock { state in
            state.isClosed = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in toResume { continuation.resume() }
    }
}

/// What a subscription delivers: records in position order, and once, the moment it has caught up.
public enum SubscriptionEvent: Sendable, Hashable {
    case record(Record)
    /// Every record committed when the subscriber reached the head has been delivered; live ones follow.
    case caughtUp(Position)
}

extension EventLog {
    /// Follows the log from `from` (the first position to deliver): history first, then `.caughtUp`, then live
    /// records as they commit. No gap, no duplicate.
    ///
    /// A subscriber reads from the segment files at its own pace, so a slow one neither slows the writer nor
    /// holds more than one batch in memory. The sequence ends when the log closes or the task is cancelled;
    /// it throws `.corruptBatch` if a batch on its way is damaged.
    public func subscribe(from: Position = .first) -> Subscription {
        Subscription(log: self, next: max(from.rawValue, 1))
    }

    /// An `AsyncSequence` of ``SubscriptionEvent``s; see ``EventLog/subscribe(from:)``.
    public struct Subscription: AsyncSequence, Sendable {
        public typealias Element = SubscriptionEvent
        let log: EventLog
        let next: UInt64

        public func makeAsyncIterator() -> Iterator { Iterator(log: log, next: next) }

        /// Not Sendable across tasks: one consumer iterates.
        public struct Iterator: AsyncIteratorProtocol {
            let log: EventLog
            var next: UInt64
            var buffer: [Record] = []
            var bufferIndex = 0
            var hasSignalledCaughtUp = false

            init(log: EventLog, next: UInt64) {
                self.log = log
                self.next = next
            }

            public mutating func next() async throws -> SubscriptionEvent? {
                while true {
                    if bufferIndex < buffer.count {
                        let record = buffer[bufferIndex]
                        bufferIndex += 1
                        next = record.position.rawValue + 1
                        return .record(record)
                    }
                    if Task.isCancelled { return nil }
                    let generation = log.notifier.generation
                    let head = log.committedPosition
                    if next <= head {
                        buffer = try log.read(from: Position(next), limit: 1024)
                        bufferIndex = 0
                        continue
                    }
                    if !hasSignalledCaughtUp {
                        hasSignalledCaughtUp = true
                        return .caughtUp(Position(head))
                    }
                    if log.notifier.isClosed { return nil }
                    await log.notifier.wait(after: generation)
                }
            }
        }
    }
}
