extension JetStream {
    /// Every message of `stream` (on `subject` when given) from sequence `from`, each exactly once and in order,
    /// then the new ones as they are stored, until the task reading it is cancelled.
    ///
    /// An ordered consumer: an ephemeral push consumer (memory storage, one replica, no acknowledgements, flow
    /// control, idle heartbeats every second) that the client replaces, starting after the last message it
    /// delivered, whenever the consumer's sequence skips, a heartbeat is missed, the subscription falls behind,
    /// or the connection moves to another server. Creating a consumer is retried for 30 seconds while
    /// JetStream does not answer (a leader election); after that, or on any other API error, the sequence
    /// throws a ``JetStreamError``.
    ///
    /// The server sends nothing more once its flow-control window is full and the reader has not caught up, so
    /// what is buffered is bounded by that window and ``NATSOptions/maxPendingPerSubscription``. Dropping or
    /// cancelling the sequence removes the consumer. Iterate it from one task at a time.
    public func orderedMessages(
        stream: String, subject: String? = nil, from sequence: UInt64
    ) -> AsyncThrowingStream<StoredMessage, any Error> {
        let consumer = OrderedConsumer(jetStream: self, stream: stream, filter: subject, start: max(1, sequence))
        return AsyncThrowingStream(unfolding: { try await consumer.next() })
    }
}

/// The state of one ordered consumer: where it is in the stream and the server-side consumer feeding it.
actor OrderedConsumer {
    private let jetStream: JetStream
    private let stream: String
    private let filter: String?
    private let heartbeat = Duration.seconds(1)
    private let recoveryWindow = Duration.seconds(30)

    /// The stream sequence of the next message to deliver (at least).
    private var nextStreamSequence: UInt64
    /// The consumer sequence the next message from the current consumer must carry.
    private var nextConsumerSequence: UInt64 = 1
    private var subscription: NATSSubscription?
    private var consumerName: String?
    /// The connection's handshake count when the current consumer was made.
    private var connectionCount: UInt64 = 0
    private var isFinished = false

    init(jetStream: JetStream, stream: String, filter: String?, start: UInt64) {
        self.jetStream = jetStream
        self.stream = stream
        self.filter = filter
        self.nextStreamSequence = start
    }

    deinit {
        if let consumerName {
            let connection = jetStream.connection
            let subject = "\(jetStream.apiPrefix).CONSUMER.DELETE.\(stream).\(consumerName)"
            Task { try? await connection.publish(subject, payload: [], replyTo: connection.newInbox()) }
        }
    }

    func next() async throws -> JetStream.StoredMessage? {
        guard !isFinished else { return nil }
        do {
            while true {
                if Task.isCancelled {
                    finish()
                    return nil
                }
                guard let subscription else {
                    try await startConsumer()
                    continue
                }
                if jetStream.connection.connectionCount != connectionCount {
                    abandonConsumer()
                    continue
                }
                let message: NATSMessage?
                do {
                    message = try await subscription.next(timeout: heartbeat * 3)
                } catch  where error.code == .timeout || error.code == .slowConsumer {
                    abandonConsumer()
                    continue
                } catch {
                    throw JetStreamError(error, doing: "reading stream \(stream)")
                }
                guard let message else {
                    if Task.isCancelled {
                        finish()
                        return nil
                    }
                    throw JetStreamError(
                        .connection, "reading stream \(stream): the connection was closed",
                        cause: NATSError(.connectionClosed, "the connection was closed"))
                }
                if let status = message.status {
                    await handleStatus(status, message)
                    continue
                }
                guard let (streamSequence, consumerSequence) = Self.sequences(fromAckSubject: message.replyTo),
                    consumerSequence == nextConsumerSequence, streamSequence >= nextStreamSequence
                else {
                    abandonConsumer()
                    continue
                }
                nextConsumerSequence += 1
                nextStreamSequence = streamSequence + 1
                return JetStream.StoredMessage(
                    subject: message.subject, sequence: streamSequence, headers: message.headers,
                    payload: message.payload, time: nil)
            }
        } catch {
            finish()
            if Task.isCancelled { return nil }
            throw error
        }
    }

    /// Idle heartbeats and flow-control requests (status 100); anything else means the consumer is gone.
    private func handleStatus(_ status: Int, _ message: NATSMessage) async {
        guard status == 100 else {
            abandonConsumer()
            return
        }
        let connection = jetStream.connection
        if let reply = message.replyTo {
            // A flow-control request: answered once every message sent before it has been handed out.
            try? await connection.publish(reply, payload: [])
            return
        }
        if let stalled = message.headers?["Nats-Consumer-Stalled"] {
            try? await connection.publish(stalled, payload: [])
        }
        if let last = message.headers?["Nats-Last-Consumer"].flatMap(UInt64.init), last != nextConsumerSequence - 1 {
            abandonConsumer()
        }
    }

    /// Makes a new consumer starting at ``nextStreamSequence``, retrying while JetStream does not answer.
    private func startConsumer() async throws {
        let deadline = ContinuousClock.now + recoveryWindow
        var pause = Duration.milliseconds(100)
        var apiFailures = 0
        while true {
            do {
                try await createConsumer()
                return
            } catch {
                if Task.isCancelled { throw CancellationError() }
                let mayPass: Bool
                switch error.code {
                case .timeout, .noResponders, .connection: mayPass = true
                case .api:
                    apiFailures += 1
                    mayPass = apiFailures <= 3
                default: mayPass = false
                }
                guard mayPass, ContinuousClock.now + pause < deadline else { throw error }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(2))
            }
        }
    }

    private func createConsumer() async throws(JetStreamError) {
        let connection = jetStream.connection
        let count = connection.connectionCount
        let deliverSubject = connection.newInbox()
        let action = "creating an ordered consumer on stream \(stream)"
        let subscription: NATSSubscription
        do {
            subscription = try await connection.subscribe(deliverSubject)
            // The server wants interest in the delivery subject before it makes an ephemeral consumer.
            try await connection.flush()
        } catch {
            throw JetStreamError(error, doing: action)
        }
        struct Config: Encodable {
            var deliverSubject: String
            var deliverPolicy = "by_start_sequence"
            var startSequence: UInt64
            var ackPolicy = "none"
            var replayPolicy = "instant"
            var flowControl = true
            var idleHeartbeat: Int64
            var memoryStorage = true
            var replicas = 1
            var filterSubject: String?

            enum CodingKeys: String, CodingKey {
                case deliverSubject = "deliver_subject"
                case deliverPolicy = "deliver_policy"
                case startSequence = "opt_start_seq"
                case ackPolicy = "ack_policy"
                case replayPolicy = "replay_policy"
                case flowControl = "flow_control"
                case idleHeartbeat = "idle_heartbeat"
                case memoryStorage = "mem_storage"
                case replicas = "num_replicas"
                case filterSubject = "filter_subject"
            }
        }
        struct Request: Encodable {
            var streamName: String
            var config: Config
            enum CodingKeys: String, CodingKey {
                case streamName = "stream_name"
                case config
            }
        }
        struct Response: Decodable { var name: String }
        let request = Request(
            streamName: stream,
            config: Config(
                deliverSubject: deliverSubject, startSequence: nextStreamSequence,
                idleHeartbeat: heartbeat.nanoseconds, filterSubject: filter))
        let response: Response
        do {
            response = try await jetStream.call(
                "CONSUMER.CREATE.\(stream)", body: JetStream.encode(request), as: Response.self, doing: action)
        } catch {
            await subscription.unsubscribe()
            throw error
        }
        self.subscription = subscription
        consumerName = response.name
        connectionCount = count
        nextConsumerSequence = 1
    }

    /// Drops the current consumer (the next call makes a new one after the last message delivered).
    private func abandonConsumer() {
        if let subscription { subscription.handle.connection.unsubscribe(subscription.handle.sid) }
        subscription = nil
        if let consumerName {
            let connection = jetStream.connection
            let subject = "\(jetStream.apiPrefix).CONSUMER.DELETE.\(stream).\(consumerName)"
            Task { try? await connection.publish(subject, payload: [], replyTo: connection.newInbox()) }
        }
        consumerName = nil
    }

    private func finish() {
        isFinished = true
        abandonConsumer()
    }

    /// The stream and consumer sequences in a `$JS.ACK` reply subject: `$JS.ACK.<stream>.<consumer>.<delivered>.
    /// <stream seq>.<consumer seq>.<time>.<pending>`, or the longer form with a domain and an account hash
    /// before the stream.
    static func sequences(fromAckSubject subject: String?) -> (stream: UInt64, consumer: UInt64)? {
        guard let subject else { return nil }
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        guard tokens.count >= 9, tokens[0] == "$JS", tokens[1] == "ACK" else { return nil }
        let offset = tokens.count == 9 ? 5 : 7
        guard tokens.count > offset + 1, let stream = UInt64(tokens[offset]), let consumer = UInt64(tokens[offset + 1])
        else { return nil }
        return (stream, consumer)
    }
}
