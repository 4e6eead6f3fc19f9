import NIOCore

extension NATSConnection {
    /// Publishes one message.
    ///
    /// Returns once the message is in the outbound buffer, not when the server has it (``flush(timeout:)``
    /// waits for that). When the buffer is full it waits for room up to ``NATSOptions/requestTimeout``.
    /// - Throws: `.invalidSubject`, `.invalidHeader`, `.payloadTooLarge` (over the server's `max_payload`),
    ///   `.timeout` (no room in time), `.connectionClosed`, `.cancelled`.
    public func publish(
        _ subject: String, payload: [UInt8], headers: NATSHeaders? = nil, replyTo: String? = nil
    ) async throws(NATSError) {
        try ClientOperations.validate(subject: subject)
        if let replyTo { try ClientOperations.validate(subject: replyTo, role: "reply subject") }
        let headerBlock = try headers.map { headers throws(NATSError) in try headers.encoded() }
        let size = payload.count + (headerBlock?.count ?? 0)
        let (limit, server) = state.withLock { ($0.info?.maxPayload ?? 1 << 20, $0.server) }
        guard size <= limit else {
            throw NATSError(
                .payloadTooLarge,
                "a \(size)-byte message to \(subject) is over the \(limit)-byte max_payload of "
                    + (server.map { "\($0)" } ?? "the server"))
        }
        let operation = ClientOperations.publish(
            subject: subject, replyTo: replyTo, headerBlock: headerBlock, payload: payload)
        try await enqueue(operation)
    }

    /// Sends a PING and waits for the server's PONG: everything published before has then reached the server.
    /// - Throws: `.timeout` (default ``NATSOptions/requestTimeout``), `.serverError` when the server answered
    ///   `-ERR` meanwhile (quoted), `.disconnected`, `.connectionClosed`, `.cancelled`.
    public func flush(timeout: Duration? = nil) async throws(NATSError) {
        let promise = eventLoop.makePromise(of: Void.self)
        let (closed, flush) = state.withLock { state -> (NATSError?, Bool) in
            if state.phase == .closed { return (closedError(state), false) }
            state.pending.writeStaticString("PING\r\n")
            state.pendingPings += 1
            state.pongWaiters.append(PongWaiter(promise: promise, serverError: state.unreportedServerError))
            state.unreportedServerError = nil
            return (nil, state.needsFlush())
        }
        if let closed {
            promise.fail(closed)
            throw closed
        }
        if flush { scheduleFlush() }
        let limit = timeout ?? options.requestTimeout
        let timer = eventLoop.scheduleTask(in: limit.timeAmount) {
            promise.fail(NATSError(.timeout, "the server did not answer a PING within \(limit.shortDescription)"))
        }
        defer { timer.cancel() }
        try await waitFor(promise.futureResult) {
            promise.fail(NATSError(.cancelled, "the flush was cancelled"))
        }
    }

    /// Adds one whole operation to the outbound buffer, waiting for room when it is full.
    func enqueue(_ operation: ByteBuffer) async throws(NATSError) {
        let size = operation.readableBytes
        let maximum = options.maxOutboundBytes
        let limit = options.requestTimeout
        let outcome = state.withLock {
            state -> Result<(flush: Bool, waiter: EventLoopPromise<Void>?, id: UInt64), NATSError> in
            if state.phase == .closed { return .failure(closedError(state)) }
            let used = state.pending.readableBytes + state.inFlightBytes
            if state.roomWaiters.isEmpty && (used + size <= maximum || used == 0) {
                var operation = operation
                state.pending.writeBuffer(&operation)
                return .success((state.needsFlush(), nil, 0))
            }
            let id = state.makeID()
            let promise = eventLoop.makePromise(of: Void.self)
            let timeout = eventLoop.scheduleTask(in: limit.timeAmount) {
                self.roomWaitEnded(
                    id,
                    NATSError(
                        .timeout,
                        "the outbound buffer stayed full (\(maximum) bytes) for \(limit.shortDescription)"
                            + (self.connectedServer == nil ? " while disconnected" : "")))
            }
            state.roomWaiters.append(RoomWaiter(id: id, bytes: operation, promise: promise, timeout: timeout))
            return .success((false, promise, id))
        }
        switch outcome {
        case .failure(let error):
            throw error
        case .success(let (flush, waiter, id)):
            if flush { scheduleFlush() }
            guard let waiter else { return }
            try await waitFor(waiter.futureResult) {
                self.roomWaitEnded(id, NATSError(.cancelled, "the publish was cancelled"))
            }
        }
    }

    /// Removes a waiter that timed out or was cancelled, unless it got its room first.
    private func roomWaitEnded(_ id: UInt64, _ error: NATSError) {
        let waiter = state.withLock { state -> RoomWaiter? in
            guard let index = state.roomWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.roomWaiters.remove(at: index)
        }
        waiter?.timeout.cancel()
        waiter?.promise.fail(error)
        // The waiters behind it may fit now.
        wrote(0)
    }

    /// Adds a control operation (SUB, UNSUB) that does not wait for room: subscriptions are few and small.
    func enqueueControl(_ text: String) {
        let flush = state.withLock { state -> Bool in
            guard state.phase == .connected else { return false }
            state.pending.writeString(text)
            return state.needsFlush()
        }
        if flush { scheduleFlush() }
    }

    func scheduleFlush() {
        eventLoop.execute { self.writePending() }
    }

    /// Hands the buffered operations to the channel in one write: every publish of one event-loop tick goes
    /// out together.
    private func writePending() {
        let work = state.withLock { state -> (any Channel, ByteBuffer)? in
            state.isFlushScheduled = false
            guard state.phase == .connected, let channel = state.channel, state.pending.readableBytes > 0 else {
                return nil
            }
            let buffer = state.pending
            state.pending = channel.allocator.buffer(capacity: min(max(buffer.readableBytes, 4096), 1 << 20))
            state.inFlightBytes += buffer.readableBytes
            state.writtenPings += state.pendingPings
            state.pendingPings = 0
            return (channel, buffer)
        }
        guard let (channel, buffer) = work else { return }
        let count = buffer.readableBytes
        channel.writeAndFlush(buffer).whenComplete { _ in self.wrote(count) }
    }

    /// Called when a write of `count` bytes completed (or failed): lets waiting publishes in, in order.
    func wrote(_ count: Int) {
        let maximum = options.maxOutboundBytes
        let (admitted, flush) = state.withLock { state -> ([RoomWaiter], Bool) in
            state.inFlightBytes -= count
            var admitted: [RoomWaiter] = []
            while let first = state.roomWaiters.first {
                let used = state.pending.readableBytes + state.inFlightBytes
                guard used + first.bytes.readableBytes <= maximum || used == 0 else { break }
                var bytes = first.bytes
                state.pending.writeBuffer(&bytes)
                admitted.append(state.roomWaiters.removeFirst())
            }
            return (admitted, state.needsFlush())
        }
        for waiter in admitted {
            waiter.timeout.cancel()
            waiter.promise.succeed()
        }
        if flush { scheduleFlush() }
    }

    /// Called every ping interval on the active channel: two pings unanswered mean the server is gone.
    func keepalive(_ channel: any Channel) {
        let (stale, flush) = state.withLock { state -> (Bool, Bool) in
            guard state.phase == .connected, state.channel === channel else { return (false, false) }
            if state.keepalivesUnanswered >= 2 { return (true, false) }
            state.keepalivesUnanswered += 1
            state.pending.writeStaticString("PING\r\n")
            state.pendingPings += 1
            state.pongWaiters.append(PongWaiter(promise: nil))
            return (false, state.needsFlush())
        }
        if stale {
            channel.pipeline.fireErrorCaught(
                NATSError(.timeout, "the server did not answer two pings in \(options.pingInterval.shortDescription)"))
        }
        if flush { scheduleFlush() }
    }

    func receivedPong() {
        let waiter = state.withLock { state -> PongWaiter? in
            state.keepalivesUnanswered = 0
            guard state.writtenPings > 0 else { return nil }
            state.writtenPings -= 1
            return state.pongWaiters.popFirst()
        }
        guard let waiter, let promise = waiter.promise else { return }
        if let text = waiter.serverError {
            promise.fail(NATSError(.serverError, text))
        } else {
            promise.succeed()
        }
    }

    /// An `-ERR` on an established connection: the flushes under way report it, whether their PING is written
    /// yet or still buffered (a PING the server has not answered yet follows what it objects to: it answers in
    /// order); with none under way, the next flush does (what it objects to was sent before that flush's PING).
    /// (The server closes the connection itself after the errors that are fatal.)
    func receivedServerError(_ text: String, from server: NATSServerAddress) {
        let said = "\(server) said '\(text)'"
        state.withLock { state in
            state.lastServerError = said
            var reported = false
            for index in state.pongWaiters.indices where state.pongWaiters[index].serverError == nil {
                state.pongWaiters[index].serverError = said
                if state.pongWaiters[index].promise != nil { reported = true }
            }
            if !reported { state.unreportedServerError = said }
        }
    }

    func closedError(_ state: State) -> NATSError {
        state.closedError ?? NATSError(.connectionClosed, "the connection is closed")
    }
}
