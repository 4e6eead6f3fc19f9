import NIOCore

extension NATSConnection {
    /// Subscribes to `subject` (wildcards allowed), in queue group `queue` when given.
    ///
    /// The subscription is re-sent to each server the connection moves to. It ends (UNSUB) when
    /// ``NATSSubscription/unsubscribe()`` is called, when the task reading it is cancelled, when every copy of
    /// it is dropped, or when its reader falls ``NATSOptions/maxPendingPerSubscription`` messages behind.
    /// - Throws: `.invalidSubject`, `.connectionClosed`.
    public func subscribe(_ subject: String, queue: String? = nil) async throws(NATSError) -> NATSSubscription {
        try ClientOperations.validate(subject: subject)
        if let queue { try ClientOperations.validate(subject: queue, role: "queue group") }
        let buffer = SubscriptionBuffer(capacity: max(1, options.maxPendingPerSubscription), eventLoop: eventLoop)
        let result = state.withLock { state -> Result<UInt64, NATSError> in
            if state.phase == .closed { return .failure(closedError(state)) }
            let sid = state.makeID()
            state.routes[sid] = .subscription(subject: subject, queue: queue, buffer: buffer)
            return .success(sid)
        }
        let sid = try result.get()
        buffer.setOnCancel { [weak self] in self?.unsubscribe(sid) }
        enqueueControl(ClientOperations.subscribe(subject: subject, queue: queue, sid: sid))
        return NATSSubscription(
            subject: subject, queue: queue, buffer: buffer, handle: SubscriptionHandle(connection: self, sid: sid))
    }

    /// Forgets subscription `sid` and tells the server (when connected; a reconnect does not re-send it).
    func unsubscribe(_ sid: UInt64) {
        let route = state.withLock { $0.routes.removeValue(forKey: sid) }
        guard let route else { return }
        enqueueControl(ClientOperations.unsubscribe(sid: sid))
        if case .subscription(_, _, let buffer) = route { buffer.finish(nil) }
    }

    /// Sends a request and waits for the first reply.
    ///
    /// Replies come to one wildcard subscription, `_INBOX.<random>.*`, shared by every request of the
    /// connection.
    /// - Throws: `.noResponders` (no subscriber on `subject`), `.timeout` (default
    ///   ``NATSOptions/requestTimeout``), `.disconnected` (the connection dropped meanwhile; the request may
    ///   or may not have been seen), and what ``publish(_:payload:headers:replyTo:)`` throws.
    public func request(
        _ subject: String, payload: [UInt8], headers: NATSHeaders? = nil, timeout: Duration? = nil
    ) async throws(NATSError) -> NATSMessage {
        try ClientOperations.validate(subject: subject)
        let promise = eventLoop.makePromise(of: NATSMessage.self)
        let limit = timeout ?? options.requestTimeout
        let registered = state.withLock { state -> Result<(token: String, subscribe: String?), NATSError> in
            if state.phase == .closed { return .failure(closedError(state)) }
            var subscribe: String?
            if state.requestInboxSID == nil {
                let sid = state.makeID()
                state.requestInboxSID = sid
                state.routes[sid] = .requestInbox(subject: requestPrefix + "*")
                subscribe = ClientOperations.subscribe(subject: requestPrefix + "*", queue: nil, sid: sid)
            }
            let token = String(state.makeID(), radix: 36)
            state.requests[token] = PendingRequest(subject: subject, promise: promise)
            return .success((token, subscribe))
        }
        let token: String
        switch registered {
        case .failure(let error):
            promise.fail(error)
            throw error
        case .success(let (registeredToken, subscribe)):
            token = registeredToken
            if let subscribe { enqueueControl(subscribe) }
        }
        let timer = eventLoop.scheduleTask(in: limit.timeAmount) {
            self.requestEnded(
                token, NATSError(.timeout, "no reply to a request on \(subject) within \(limit.shortDescription)"))
        }
        defer { timer.cancel() }
        do {
            try await publish(subject, payload: payload, headers: headers, replyTo: requestPrefix + token)
        } catch {
            requestEnded(token, error)
            throw error
        }
        return try await waitFor(promise.futureResult) {
            self.requestEnded(token, NATSError(.cancelled, "the request on \(subject) was cancelled"))
        }
    }

    private func requestEnded(_ token: String, _ error: NATSError) {
        state.withLock { $0.requests.removeValue(forKey: token) }?.promise.fail(error)
    }

    /// Called by the handler for every MSG/HMSG: hands it to its subscription or waiting request.
    func deliver(_ message: NATSMessage, sid: UInt64) {
        guard let route = state.withLock({ $0.routes[sid] }) else { return }
        switch route {
        case .subscription(let subject, _, let buffer):
            if !buffer.push(message) {
                buffer.finish(
                    NATSError(
                        .slowConsumer,
                        "the subscription to \(subject) fell \(buffer.capacity) messages behind and was ended"))
                unsubscribe(sid)
            }
        case .requestInbox:
            guard message.subject.hasPrefix(requestPrefix) else { return }
            let token = String(message.subject.dropFirst(requestPrefix.utf8.count))
            guard let request = state.withLock({ $0.requests.removeValue(forKey: token) }) else { return }
            if message.status == 503 {
                request.promise.fail(
                    NATSError(.noResponders, "no one answers requests on \(request.subject) (503 from the server)"))
            } else {
                request.promise.succeed(message)
            }
        }
    }
}

/// Ends a subscription when the last copy of its ``NATSSubscription`` and of its iterators is gone.
final class SubscriptionHandle: Sendable {
    let connection: NATSConnection
    let sid: UInt64

    init(connection: NATSConnection, sid: UInt64) {
        self.connection = connection
        self.sid = sid
    }

    deinit {
        connection.unsubscribe(sid)
    }
}
