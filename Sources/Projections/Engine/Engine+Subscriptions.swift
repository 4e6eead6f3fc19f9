import EventLog

extension Engine {
    /// Suspends until the durable state passes `position`, the engine closes, or the task is cancelled;
    /// false once the engine is closed.
    public func waitForDurable(after position: Position) async -> Bool {
        await durableChanges.wait { self.position > position }
    }

    /// A stream of `view` as the durable state changes: the current value first, then each new value that
    /// differs from the last one sent. Ends when the engine closes or the consumer stops.
    func updates<T: Sendable & Equatable>(_ view: @escaping @Sendable () -> T?) -> AsyncStream<T> {
        let (stream, continuation) = AsyncStream<T>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let task = Task { [self] in
            var seen = position
            var last = view()
            if let last { continuation.yield(last) }
            while await waitForDurable(after: seen), !Task.isCancelled {
                seen = position
                guard let current = view(), current != last else { continue }
                last = current
                continuation.yield(current)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// Live updates of `user`'s room list: the current list first, then a new list whenever durable events
    /// change it.
    public func roomListUpdates(_ user: UserID) -> AsyncStream<[RoomSummary]> {
        updates { [self] in try? rooms(user) }
    }

    /// Live updates of a room's newest messages: the current page first, then the newest `limit` messages
    /// whenever durable events change them.
    public func messageUpdates(_ room: RoomID, limit: Int = 50) -> AsyncStream<MessagePage> {
        updates { [self] in try? messages(room, limit: limit) }
    }
}
