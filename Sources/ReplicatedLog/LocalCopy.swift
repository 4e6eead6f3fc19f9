import EventLog
import Foundation

/// A node's copy of the stream: a local ``EventLog`` (segments, indexes, checkpoint, snapshots, as on one machine)
/// holding the stream's batches byte for byte, one batch per message, so that its batch count is the stream sequence
/// of its newest batch and its head digest the stream's chain value there.
///
/// Batches are written by a thread of the copy's own, in the order they are queued: the follower and the writer
/// queue a checked batch and go on, and neither blocks a thread of the cooperative pool on a write. The queue is
/// bounded (``maximumQueuedBytes``): a reader faster than the disk waits for room (``waitForRoom()``).
///
/// The copy is a cache of the stream, never a second source: it is written only with batches the stream holds, with
/// buffered durability (the stream's quorum is what makes an append durable), and a copy that does not match the
/// stream where it ends is set aside (renamed, never deleted) and read again.
///
/// `@unchecked Sendable`: the queue and its waiters are guarded by `condition`.
final class LocalCopy: @unchecked Sendable {
    /// Batches to write, and what to call once they are written (or failed to be).
    private struct Item {
        var batches: [BatchMessage]
        var bytes: Int
        var done: (@Sendable (EventLogError?) -> Void)?
    }

    /// The log holding the copy.
    let log: EventLog
    /// Its directory, and whether the copy made it (a temporary directory, removed at ``close()``).
    let directory: String
    let isTemporary: Bool
    /// The queue's bound: a reader waits above it.
    static let maximumQueuedBytes = 32 << 20

    private let condition = NSCondition()
    private var queue: [Item] = []
    private var queuedBytes = 0
    private var isWriting = false
    private var isClosing = false
    private var failure: EventLogError?
    private var roomWaiters: [CheckedContinuation<Void, Never>] = []
    private var drainWaiters: [CheckedContinuation<EventLogError?, Never>] = []
    private let stopped = DispatchGroup()
    /// Called on the copy's thread after each write, with the newest position written.
    private let written: @Sendable (UInt64) -> Void
    /// Called once, on the copy's thread, when a write fails.
    private let failed: @Sendable (EventLogError) -> Void

    private init(
        log: EventLog, directory: String, isTemporary: Bool, written: @escaping @Sendable (UInt64) -> Void,
        failed: @escaping @Sendable (EventLogError) -> Void
    ) {
        self.log = log
        self.directory = directory
        self.isTemporary = isTemporary
        self.written = written
        self.failed = failed
    }

    /// Opens (or creates) the copy in `directory`, or in a new temporary directory when nil, and starts its thread.
    /// Blocks the calling thread: async code calls it through `onDedicatedThread`.
    /// - Throws: what opening the log throws (`.locked` when another process has the directory, `.notALog` for a
    ///   directory holding other files).
    static func open(
        directory: String?, stream: String, written: @escaping @Sendable (UInt64) -> Void,
        failed: @escaping @Sendable (EventLogError) -> Void
    ) throws(EventLogError) -> LocalCopy {
        let path =
            directory
            ?? NSTemporaryDirectory()
            + "/parley-copy-\(stream.lowercased())-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var configuration = EventLog.Configuration()
        configuration.durability = .buffered(interval: .seconds(1))
        let log = try EventLog.open(directory: path, configuration: configuration)
        let copy = LocalCopy(log: log, directory: path, isTemporary: directory == nil, written: written, failed: failed)
        copy.stopped.enter()
        let thread = Thread { [copy] in
            copy.run()
            copy.stopped.leave()
        }
        thread.name = "parley-copy"
        thread.start()
        return copy
    }

    /// Queues `batch` (checked, following what was queued before) to be written; `done` is called on the copy's
    /// thread once it is, with the error when it could not be. Never waits.
    func enqueue(_ batch: BatchMessage, done: (@Sendable (EventLogError?) -> Void)? = nil) {
        condition.lock()
        if let failure = failure ?? (isClosing ? EventLogError(.closed, "the copy at \(directory) is closed") : nil) {
            condition.unlock()
            done?(failure)
            return
        }
        queue.append(Item(batches: [batch], bytes: batch.bytes.count, done: done))
        queuedBytes += batch.bytes.count
        condition.signal()
        condition.unlock()
    }

    /// Suspends while more than ``maximumQueuedBytes`` wait to be written.
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if queuedBytes <= Self.maximumQueuedBytes || failure != nil || isClosing {
                condition.unlock()
                continuation.resume()
                return
            }
            roomWaiters.append(continuation)
            condition.unlock()
        }
    }

    /// Suspends until everything queued so far is written; the failure, if a write failed.
    func drained() async -> EventLogError? {
        await withCheckedContinuation { (continuation: CheckedContinuation<EventLogError?, Never>) in
            condition.lock()
            if (queue.isEmpty && !isWriting) || failure != nil {
                let failure = self.failure
                condition.unlock()
                continuation.resume(returning: failure)
                return
            }
            drainWaiters.append(continuation)
            condition.unlock()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !isClosing { condition.wait() }
            if queue.isEmpty {
                condition.unlock()
                return
            }
            let items = queue
            queue.removeAll()
            isWriting = true
            let room = roomWaiters
            roomWaiters.removeAll()
            condition.unlock()
            // Taken from the queue: a reader waiting for room goes on while these are written.
            for waiter in room { waiter.resume() }
            var error: EventLogError?
            do {
                try log.appendCopied(items.flatMap(\.batches))
            } catch let failure {
                error = failure
            }
            if error == nil { written(log.head.rawValue) }
            condition.lock()
            isWriting = false
            queuedBytes -= items.reduce(0) { $0 + $1.bytes }
            // A reader that came for room while these were written waits for it now.
            let roomNow = queuedBytes <= Self.maximumQueuedBytes ? roomWaiters : []
            if queuedBytes <= Self.maximumQueuedBytes { roomWaiters.removeAll() }
            let isFirstFailure = error != nil && failure == nil
            if let error, failure == nil { failure = error }
            let later = failure != nil ? queue : []
            if failure != nil { queue.removeAll() }
            let drained = queue.isEmpty ? drainWaiters : []
            if queue.isEmpty { drainWaiters.removeAll() }
            let failureNow = failure
            condition.unlock()
            for waiter in roomNow { waiter.resume() }
            for item in items { item.done?(error) }
            for item in later { item.done?(failureNow) }
            if isFirstFailure, let error { failed(error) }
            for waiter in drained { waiter.resume(returning: failureNow) }
        }
    }

    /// Writes what is queued, stops the thread and closes the log (a checkpoint, so the next open is quick); a
    /// temporary copy's directory is removed. Blocks the calling thread.
    func close() {
        condition.lock()
        isClosing = true
        let room = roomWaiters
        roomWaiters.removeAll()
        condition.signal()
        condition.unlock()
        for waiter in room { waiter.resume() }
        stopped.wait()
        condition.lock()
        let drained = drainWaiters
        drainWaiters.removeAll()
        let failure = self.failure
        condition.unlock()
        for waiter in drained { waiter.resume(returning: failure) }
        try? log.close()
        if isTemporary { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Closes the copy and moves its directory aside (`<directory>.set-aside-<time>`), or removes it when it is
    /// temporary; returns where it went. Blocks the calling thread.
    func setAside() -> String? {
        close()
        guard !isTemporary else { return nil }
        let aside = directory + ".set-aside-\(Int(Date().timeIntervalSince1970))"
        return (try? FileManager.default.moveItem(atPath: directory, toPath: aside)) != nil ? aside : nil
    }
}
