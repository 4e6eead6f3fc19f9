import DequeModule
import NIOCore
import Synchronization

/// The messages of one subscription, in the order the server sent them.
///
/// **Bounded.** It holds at most ``NATSOptions/maxPendingPerSubscription`` messages its reader has not taken.
/// When one more arrives the subscription ends: it is unsubscribed, the reader gets the messages already held,
/// then `.slowConsumer` is thrown. Nothing is dropped silently; a reader that cannot keep up must subscribe again
/// (and learn elsewhere what it missed).
///
/// **Lifetime.** It ends with nil after ``unsubscribe()`` or ``NATSConnection/close()``, with
/// `.connectionClosed` when the reconnect attempts ran out, and with nil when the task iterating it is
/// cancelled (which unsubscribes). Dropping every copy of it unsubscribes too. Iterate it from one task at a time.
public struct NATSSubscription: AsyncSequence, Sendable {
    public typealias Element = NATSMessage
    public typealias Failure = NATSError

    /// The subject (or pattern) subscribed to.
    public let subject: String
    /// The queue group, when there is one.
    public let queue: String?
    let buffer: SubscriptionBuffer
    let handle: SubscriptionHandle

    /// Stops the subscription (UNSUB); messages already held are still handed out, then the sequence ends.
    public func unsubscribe() async {
        handle.connection.unsubscribe(handle.sid)
    }

    /// The next message, waiting at most `timeout`.
    /// - Throws: `.timeout` when none came in time (the subscription goes on), `.slowConsumer`,
    ///   `.connectionClosed`.
    func next(timeout: Duration?) async throws(NATSError) -> NATSMessage? {
        try await buffer.next(timeout: timeout)
    }

    /// An iterator over the subscription's messages; iterate from one task at a time.
    public func makeAsyncIterator() -> Iterator {
        Iterator(buffer: buffer, handle: handle)
    }

    /// Takes the messages in order; see ``NATSSubscription`` for how the sequence ends.
    public struct Iterator: AsyncIteratorProtocol {
        let buffer: SubscriptionBuffer
        let handle: SubscriptionHandle

        /// The next message; nil once the subscription ended.
        /// - Throws: `.slowConsumer`, `.connectionClosed` (once, then nil).
        public mutating func next() async throws(NATSError) -> NATSMessage? {
            try await buffer.next(timeout: nil)
        }

        /// The same as ``next()``.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NATSError) -> NATSMessage? {
            try await buffer.next(timeout: nil)
        }
    }
}

/// The bounded queue between the connection's event loop and a subscription's reader.
final class SubscriptionBuffer: Sendable {
    private enum End {
        case finished
        case failed(NATSError)
    }

    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Result<NATSMessage?, NATSError>, Never>
        var timer: Scheduled<Void>?

        func resume(_ result: Result<NATSMessage?, NATSError>) {
            timer?.cancel()
            continuation.resume(returning: result)
        }
    }

    private struct State {
        var messages: Deque<NATSMessage> = []
        var waiter: Waiter?
        var end: End?
        var nextWaiterID: UInt64 = 0
        var onCancel: (@Sendable () -> Void)?
    }

    let capacity: Int
    private let eventLoop: any EventLoop
    private let state = Mutex(State())

    init(capacity: Int, eventLoop: any EventLoop) {
        self.capacity = capacity
        self.eventLoop = eventLoop
    }

    /// What to do when the reader's task is cancelled (unsubscribe).
    func setOnCancel(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.onCancel = action }
    }

    /// Adds a message; false when the buffer is full (the caller ends the subscription).
    func push(_ message: NATSMessage) -> Bool {
        let (accepted, waiter) = state.withLock { state -> (Bool, Waiter?) in
            if state.end != nil { return (true, nil) }
            if let waiter = state.waiter {
                state.waiter = nil
                return (true, waiter)
            }
            guard state.messages.count < capacity else { return (false, nil) }
            state.messages.append(message)
            return (true, nil)
        }
        waiter?.resume(.success(message))
        return accepted
    }

    /// Ends the sequence after the messages held: with nil, or by throwing `error` once.
    func finish(_ error: NATSError?) {
        let waiter = state.withLock { state -> Waiter? in
            guard state.end == nil else { return nil }
            state.onCancel = nil
            let waiter = state.waiter
            state.waiter = nil
            // A waiting reader has taken everything held: it gets the error now.
            if let error, waiter == nil { state.end = .failed(error) } else { state.end = .finished }
            return waiter
        }
        waiter?.resume(error.map { .failure($0) } ?? .success(nil))
    }

    func next(timeout: Duration?) async throws(NATSError) -> NATSMessage? {
        if Task.isCancelled {
            cancel(nil)
            return nil
        }
        if let ready = state.withLock({ takeReady(&$0) }) { return try ready.get() }
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<NATSMessage?, NATSError>, Never>) in
                let immediate = state.withLock { state -> Result<NATSMessage?, NATSError>? in
                    if let ready = takeReady(&state) { return ready }
                    if Task.isCancelled { return .success(nil) }
                    var waiter = Waiter(id: id, continuation: continuation)
                    if let timeout {
                        waiter.timer = eventLoop.scheduleTask(in: timeout.timeAmount) {
                            self.expire(id, after: timeout)
                        }
                    }
                    state.waiter = waiter
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            cancel(id)
        }
        if Task.isCancelled {
            cancel(nil)
            if case .success(nil) = result { return nil }
        }
        return try result.get()
    }

    /// A message or the end, when one is there without waiting. Once an error was reported, the end is nil.
    private func takeReady(_ state: inout State) -> Result<NATSMessage?, NATSError>? {
        if let message = state.messages.popFirst() { return .success(message) }
        switch state.end {
        case nil: return nil
        case .finished: return .success(nil)
        case .failed(let error):
            state.end = .finished
            return .failure(error)
        }
    }

    /// The reader's task was cancelled: the sequence ends and the subscription is ended.
    private func cancel(_ id: UInt64?) {
        let (waiter, onCancel) = state.withLock { state -> (Waiter?, (@Sendable () -> Void)?) in
            let onCancel = state.onCancel
            state.onCancel = nil
            state.end = .finished
            state.messages.removeAll()
            guard let waiter = state.waiter, id == nil || waiter.id == id else { return (nil, onCancel) }
            state.waiter = nil
            return (waiter, onCancel)
        }
        waiter?.resume(.success(nil))
        onCancel?()
    }

    private func expire(_ id: UInt64, after timeout: Duration) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(.failure(NATSError(.timeout, "no message within \(timeout.shortDescription)")))
    }
}
