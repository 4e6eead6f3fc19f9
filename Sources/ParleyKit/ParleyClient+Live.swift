import Foundation
import HTTPTypes
import Logging
import ParleyAPI
import Synchronization
import WSClient

extension RetryPolicy {
    /// The live channel's default: up to 40 connection attempts in a row that fail before the sequence ends,
    /// 0.1 s doubling to at most 5 s between them (a few minutes: long enough for a server to restart).
    public static var live: RetryPolicy { RetryPolicy(maxAttempts: 40) }
}

extension ParleyClient {
    /// The live channel (`GET /v1/live`, a WebSocket): the changes of `topics`, typed, in log order, for as long
    /// as the sequence is iterated.
    ///
    /// Each topic is subscribed `since` position `since` when given (e.g. a ``sync(since:)`` answer's
    /// `position`), else it first gets its whole current view (events without a position), then
    /// ``LiveEvent/Change/caughtUp(reset:)``, then its changes as they happen.
    ///
    /// The connection is kept up: after a dropped connection, a stopping server (1001), a client too slow for
    /// the server (4000) or an expired token (4001, after which the token provider is asked for a fresh one), the
    /// sequence connects again with backoff and subscribes each topic `since` the last position it delivered for
    /// it, so that nothing is missed; a change at or before that position is dropped, so that nothing is
    /// repeated. A topic cut off in the middle of its first whole view (before its `caughtUp`) gets the view again.
    /// A topic the server `unsubscribed`, or refused to subscribe, is not subscribed again; when none is left, the
    /// sequence ends.
    ///
    /// The sequence throws a ``ParleyError`` after `retryPolicy.maxAttempts` connection attempts in a row fail,
    /// or when a frame cannot be read; whatever the token provider throws ends it too. Cancelling the task that
    /// iterates it (or dropping the iterator) closes the connection. Frames are buffered without bound until
    /// they are consumed.
    public func live(topics: [LiveTopic], since: Int? = nil, retryPolicy: RetryPolicy = .live)
        -> AsyncThrowingStream<LiveEvent, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveEvent.self)
        let session = LiveSession(
            url: Self.liveURL(baseURL), topics: topics, since: since, tokens: tokens, policy: retryPolicy,
            logger: logger, continuation: continuation)
        let task = Task { await session.run() }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// `baseURL` with a WebSocket scheme and `/v1/live` added to its path.
    static func liveURL(_ baseURL: URL) -> String {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.scheme = components.scheme == "https" || components.scheme == "wss" ? "wss" : "ws"
        let path = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = path + "/v1/live"
        return components.string ?? baseURL.absoluteString
    }
}

/// One `live(topics:)` sequence: its connections one after the other, and what it delivered.
final class LiveSession: Sendable {
    struct State {
        /// Per topic, the last position delivered (of a change or a `caughtUp`).
        var delivered: [LiveTopic: Int] = [:]
        /// Topics the server unsubscribed or refused: not subscribed again.
        var ended: Set<LiveTopic> = []
        /// Whether the current connection was upgraded.
        var isConnected = false
        /// What ends the sequence, found while serving a connection (WSClient may close the connection on a
        /// handler's error without rethrowing it).
        var fatal: ParleyError?
    }

    let url: String
    let topics: [LiveTopic]
    let since: Int?
    let tokens: TokenSource
    let policy: RetryPolicy
    let logger: Logger
    let continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    let state = Mutex(State())

    init(
        url: String, topics: [LiveTopic], since: Int?, tokens: TokenSource, policy: RetryPolicy, logger: Logger,
        continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    ) {
        self.url = url
        self.topics = topics
        self.since = since
        self.tokens = tokens
        self.policy = policy
        self.logger = logger
        self.continuation = continuation
    }

    /// Connects, and connects again, until the task is cancelled or too many attempts in a row fail.
    func run() async {
        var refresh = false
        var failures = 0
        while !Task.isCancelled {
            let token: String
            do {
                token = try await tokens.token(refresh: refresh)
            } catch {
                finish(throwing: error)
                return
            }
            refresh = false
            state.withLock { $0.isConnected = false }
            var lastProblem = "the connection ended"
            do {
                var configuration = WebSocketClientConfiguration(
                    maxFrameSize: 1 << 22, autoPing: .enabled(timePeriod: .seconds(30)))
                configuration.additionalHeaders[.authorization] = "Bearer " + token
                let close = try await WebSocketClient.connect(
                    url: url, configuration: configuration, logger: logger
                ) { inbound, outbound, _ in
                    try await self.serve(inbound, outbound)
                }
                lastProblem = "closed with \(close.map { "\($0.closeCode) \($0.reason ?? "")" } ?? "no close frame")"
                if case .unknown(let code) = close?.closeCode, code == 4001 || code == 4401 { refresh = true }
            } catch {
                if Task.isCancelled { break }
                // A refused upgrade is most often a token the server no longer takes (401): get a fresh one.
                if let error = error as? WebSocketClientError, error == .webSocketUpgradeFailed { refresh = true }
                lastProblem = "\(error)"
            }
            if let fatal = state.withLock({ $0.fatal }) {
                finish(throwing: fatal)
                return
            }
            if isOver {
                continuation.finish()
                return
            }
            if Task.isCancelled { break }
            failures = state.withLock { $0.isConnected } ? 1 : failures + 1
            guard failures < policy.maxAttempts else {
                finish(
                    throwing: ParleyError(
                        status: 0, code: .transportFailed,
                        message: "the live channel \(url) failed \(failures) times in a row: \(lastProblem)"))
                return
            }
            logger.debug("live channel: \(lastProblem); connecting again", metadata: ["url": "\(url)"])
            do {
                try await Task.sleep(for: policy.delay(afterFailures: failures))
            } catch {
                break
            }
        }
        continuation.finish()
    }

    /// Whether every topic was unsubscribed or refused: then the sequence ends.
    private var isOver: Bool { state.withLock { state in topics.allSatisfy { state.ended.contains($0) } } }

    private func finish(throwing error: any Error) {
        if Task.isCancelled || error is CancellationError {
            continuation.finish()
        } else {
            continuation.finish(throwing: error)
        }
    }

    /// One connection: subscribes each topic since what was delivered, then delivers what arrives.
    private func serve(_ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter) async throws {
        let (floors, ended) = state.withLock { state in
            state.isConnected = true
            return (state.delivered, state.ended)
        }
        let encoder = JSONEncoder()
        for topic in topics where !ended.contains(topic) {
            let frame = LiveClientFrame(type: "subscribe", topic: topic.description, since: floors[topic] ?? since)
            try await outbound.writeTextMessage(String(decoding: try encoder.encode(frame), as: UTF8.self))
        }
        let decoder = JSONDecoder.parley
        for try await message in inbound.messages(maxSize: 1 << 24) {
            guard case .text(let text) = message else { continue }
            let frame: LiveFrame
            do {
                frame = try decoder.decode(LiveFrame.self, from: Data(text.utf8))
            } catch {
                let fatal = ParleyError(
                    status: 0, code: .unreadableAnswer, message: "a live frame that is not the contract's: \(text)",
                    cause: error)
                state.withLock { $0.fatal = fatal }
                throw fatal
            }
            guard let change = frame.change, let topic = frame.topic.flatMap(LiveTopic.init(wireName:)) else {
                continue
            }
            if let position = frame.position {
                let floor = floors[topic] ?? since
                let isRepeat = state.withLock { state in
                    // Before the position resumed from: sent before the reconnection. Before the last one
                    // delivered: out of order, which a server never sends.
                    if case .caughtUp = change {
                    } else if let floor, position <= floor {
                        return true
                    }
                    if let last = state.delivered[topic], position < last { return true }
                    state.delivered[topic] = position
                    return false
                }
                if isRepeat { continue }
            }
            switch change {
            case .unsubscribed, .refused: state.withLock { _ = $0.ended.insert(topic) }
            default: break
            }
            continuation.yield(LiveEvent(topic: topic, position: frame.position, change: change))
            if isOver { return }
        }
    }
}
