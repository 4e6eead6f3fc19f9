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
    /// iterates it (or dropping the iterator) closes the connection.
    ///
    /// At most `bufferLimit` changes wait to be read (a topic's whole first view and its `caughtUp` are not
    /// held to it). When the app falls further behind, the connection is closed; once the app has read half of
    /// what waits, the sequence connects again and resumes each topic after the last change it buffered, as
    /// after a dropped connection. A slow reader costs memory for `bufferLimit` changes, not for how far it is
    /// behind, and still misses nothing.
    public func live(
        topics: [LiveTopic], since: Int? = nil, retryPolicy: RetryPolicy = .live, bufferLimit: Int = 1_000
    ) -> LiveEvents {
        precondition(bufferLimit > 0, "bufferLimit must be positive")
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LiveEvent.self)
        let session = LiveSession(
            url: Self.liveURL(baseURL), topics: topics, since: since, tokens: tokens, policy: retryPolicy,
            bufferLimit: bufferLimit, logger: logger, continuation: continuation)
        let task = Task { await session.run() }
        continuation.onTermination = { _ in task.cancel() }
        return LiveEvents(stream: stream, session: session)
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

/// What ``ParleyClient/live(topics:since:retryPolicy:bufferLimit:)`` returns: the live channel's events, in
/// log order. Each one read makes room in the sequence's buffer.
public struct LiveEvents: AsyncSequence, Sendable {
    public typealias Element = LiveEvent

    let stream: AsyncThrowingStream<LiveEvent, any Error>
    let session: LiveSession

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<LiveEvent, any Error>.AsyncIterator
        let session: LiveSession

        public mutating func next() async throws -> LiveEvent? {
            let event = try await base.next()
            if event != nil { session.read() }
            return event
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator(), session: session)
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
        /// Events buffered and not read yet.
        var unread = 0
        /// Whether the current connection was closed because the app fell `bufferLimit` changes behind.
        var isBehind = false
        /// The connection loop, waiting for the app to read (see ``waitForTheReader()``).
        var waiter: CheckedContinuation<Void, Never>?
    }

    let url: String
    let topics: [LiveTopic]
    let since: Int?
    let tokens: TokenSource
    let policy: RetryPolicy
    let bufferLimit: Int
    let logger: Logger
    let continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    let state = Mutex(State())

    init(
        url: String, topics: [LiveTopic], since: Int?, tokens: TokenSource, policy: RetryPolicy, bufferLimit: Int,
        logger: Logger, continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    ) {
        self.url = url
        self.topics = topics
        self.since = since
        self.tokens = tokens
        self.policy = policy
        self.bufferLimit = bufferLimit
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
            if state.withLock({ $0.isBehind }) {
                // Not a failure: the connection is opened again, at once, when the app has read enough.
                logger.debug("live channel: the app is \(bufferLimit) changes behind; connecting again once it reads")
                await waitForTheReader()
                failures = 0
                continue
            }
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

    /// Called by the iterator for each event read: when the connection loop waits for the reader and half the
    /// buffer is read, it goes on.
    func read() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.unread -= 1
            guard state.unread <= bufferLimit / 2 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once at most half of `bufferLimit` events wait to be read, or the task is cancelled.
    private func waitForTheReader() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    state.isBehind = false
                    if state.unread <= bufferLimit / 2 || Task.isCancelled { return true }
                    state.waiter = waiter
                    return false
                }
                if ready { waiter.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
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

    /// What becomes of a frame that arrived: delivered, dropped as a repeat, or the end of a connection whose
    /// reader is `bufferLimit` changes behind.
    private enum Verdict { case deliver, repeated, behind }

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
            let floor = floors[topic] ?? since
            let verdict = state.withLock { state -> Verdict in
                if let position = frame.position {
                    // Before the position resumed from: sent before the reconnection. Before the last one
                    // delivered: out of order, which a server never sends.
                    if case .caughtUp = change {
                    } else if let floor, position <= floor {
                        return .repeated
                    }
                    if let last = state.delivered[topic], position < last { return .repeated }
                    // A change past the buffer: the connection ends here, and the next resumes from this one.
                    if case .caughtUp = change {
                    } else if state.unread >= bufferLimit {
                        state.isBehind = true
                        return .behind
                    }
                    state.delivered[topic] = position
                }
                switch change {
                case .unsubscribed, .refused: state.ended.insert(topic)
                default: break
                }
                state.unread += 1
                return .deliver
            }
            switch verdict {
            case .repeated: continue
            case .behind: return
            case .deliver: break
            }
            continuation.yield(LiveEvent(topic: topic, position: frame.position, change: change))
            if isOver { return }
        }
    }
}
