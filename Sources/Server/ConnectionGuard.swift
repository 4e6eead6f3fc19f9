import HTTPTypes
import NIOCore
import NIOHTTP1

/// The first handler of every connection, in front of the HTTP decoder: it keeps the connection limits, and
/// gives every request head ``ServerConfiguration/headTimeout`` and ``ServerConfiguration/maximumHeadSize``.
///
/// Hummingbird's idle timeout starts only once a first request has been read, and its decoder holds a head of
/// any length that never ends: without this, sockets that never finish a head are held forever, and a few
/// hundred of them use up the process's file descriptors (nothing, `/healthz` included, can be accepted then).
///
/// The head is found in the bytes themselves (it ends at the first empty line), so the guard needs nothing of
/// the decoder for the first request; ``HeadWitness`` tells it when the decoder has the first head, and
/// ``RequestGuard`` (behind the decoder, on the connections that stay HTTP) when later requests start and end.
/// A live connection stays in ``Phase/request`` once its upgrade head is through: its frames pass untouched.
///
/// What it answers itself (408, 431, 503, and 400 for a first head the decoder cannot read) it writes as bytes,
/// then stops reading and closes: the output at once, so that the client reads the answer and the end, the
/// rest after ``lingering``, so that bytes the client is still sending do not turn the close into a reset
/// that loses the answer. It answers only while no response is being written, else it just closes.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Phase {
        /// Reading a head; its timer runs.
        case head
        /// A head is whole: the request's body (or a live connection's frames) pass untouched.
        case request
        /// Between two requests of a keep-alive connection: the next byte starts a head and its timer (until
        /// then Hummingbird's idle timeout applies).
        case idle
        /// Answered or refused: whatever arrives is dropped until the connection closes.
        case closing
    }

    /// How long a connection that was answered and closed for output keeps reading (and dropping) what its
    /// client still sends, before it closes for good.
    static let lingering: TimeAmount = .seconds(2)

    let limits: ConnectionLimits
    let headTimeout: TimeAmount
    let maximumHeadSize: Int
    /// Succeeds with true once the decoder has the first head (Hummingbird then serves the connection), with
    /// false when the connection ends before (then there is nothing to serve).
    let firstHead: EventLoopPromise<Bool>

    private(set) var phase = Phase.head
    /// Responses begun (heads read) and not yet ended.
    private(set) var responsesInFlight = 0
    private var admission: (id: UInt64, peer: String?)?
    private var isActivated = false
    private var isFirstHeadDecoded = false
    private var hasFirstHeadEnded = false
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var closer: Scheduled<Void>?
    /// The head being read: its bytes so far, the length of its current line (without CR), its lines so far.
    private var headBytes = 0
    private var lineLength = 0
    private var lines = 0

    init(limits: ConnectionLimits, configuration: ServerConfiguration, firstHead: EventLoopPromise<Bool>) {
        self.limits = limits
        self.headTimeout = .nanoseconds(configuration.headTimeout.nanoseconds)
        self.maximumHeadSize = configuration.maximumHeadSize
        self.firstHead = firstHead
    }

    // MARK: Life of the connection

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive {
            // Not in the middle of the pipeline's set-up: a refusal closes the channel.
            context.eventLoop.assumeIsolated().execute { self.activate(context) }
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        activate(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
        self.context = nil
    }

    private func activate(_ context: ChannelHandlerContext) {
        guard !isActivated, context.channel.isActive else { return }
        isActivated = true
        let peer = context.channel.remoteAddress?.ipAddress
        switch limits.admit(peer: peer, channel: context.channel) {
        case .refused:
            answer(
                APIError(
                    .serviceUnavailable, "tooManyConnections",
                    "the server holds all the connections it can (from your address, or in all); retry shortly"),
                lingering: false)
        case .admitted(let id):
            admission = (id, peer)
            startHead()
        case .admittedEvicting(let id, let oldest):
            admission = (id, peer)
            oldest.close(promise: nil)
            startHead()
        }
    }

    /// Releases what the connection held; the first head will not come now.
    private func finish() {
        timer?.cancel()
        timer = nil
        closer?.cancel()
        closer = nil
        if let admission {
            limits.release(admission.id, peer: admission.peer)
            self.admission = nil
        }
        endFirstHead(decoded: false)
    }

    // MARK: Heads

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .closing:
            return
        case .request:
            context.fireChannelRead(data)
            return
        case .idle:
            startHead()
        case .head:
            break
        }
        let (count, ended) = scanHead(unwrapInboundIn(data))
        headBytes += count
        guard headBytes <= maximumHeadSize else {
            limits.record(.headTooLarge)
            answerOrClose(
                APIError(
                    .requestHeaderFieldsTooLarge, "headTooLarge",
                    "the request head is over the limit of \(maximumHeadSize) bytes"))
            return
        }
        if ended {
            leaveHead()
        } else if isFirstHeadDecoded, lines == 0, lineLength == 0 {
            // Only line ends after a request (an old client's CRLF after a body): no head has started.
            phase = .idle
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    /// Reads head bytes at the start of `buffer`: how many belong to the head, and whether it ended with them
    /// (at an empty line; CR is optional, and empty lines before the request line are skipped, as HTTP/1.1 says).
    private func scanHead(_ buffer: ByteBuffer) -> (count: Int, ended: Bool) {
        buffer.withUnsafeReadableBytes { bytes in
            for (index, byte) in bytes.enumerated() {
                switch byte {
                case UInt8(ascii: "\n"):
                    if lineLength > 0 {
                        lines += 1
                        lineLength = 0
                    } else if lines > 0 {
                        return (index + 1, true)
                    }
                case UInt8(ascii: "\r"):
                    break
                default:
                    lineLength += 1
                }
            }
            return (bytes.count, false)
        }
    }

    private func startHead() {
        phase = .head
        headBytes = 0
        lineLength = 0
        lines = 0
        guard let context, timer == nil else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: headTimeout) { self.headTimedOut() }
    }

    private func leaveHead() {
        phase = .request
        timer?.cancel()
        timer = nil
        if let admission { limits.firstHeadArrived(admission.id) }
    }

    private func headTimedOut() {
        timer = nil
        guard phase == .head else { return }
        limits.record(.headTimeout)
        if headBytes == 0 {
            // Nothing was asked: nothing to answer.
            close()
        } else {
            answerOrClose(
                APIError(
                    .requestTimeout, "headTimeout",
                    "the request head did not arrive whole within \(headTimeout.nanoseconds / 1_000_000) ms"))
        }
    }

    private func endFirstHead(decoded: Bool) {
        guard !hasFirstHeadEnded else { return }
        hasFirstHeadEnded = true
        firstHead.succeed(decoded)
    }

    // MARK: What the handlers behind say

    /// The decoder has the first head (``HeadWitness``).
    func firstHeadDecoded() {
        guard !isFirstHeadDecoded else { return }
        isFirstHeadDecoded = true
        if phase == .head { leaveHead() }
        endFirstHead(decoded: true)
    }

    /// The decoder could not read the first head: answers it (400, or 431 for too many fields); false when the
    /// first head was read already (Hummingbird answers a later one).
    func firstHeadFailed(_ error: HTTPParserError) -> Bool {
        guard !isFirstHeadDecoded else { return false }
        guard phase != .closing else { return true }
        if error == .headerOverflow {
            limits.record(.headTooLarge)
            answerOrClose(
                APIError(
                    .requestHeaderFieldsTooLarge, "headTooLarge",
                    "the request head has too many fields or too large a field"))
        } else {
            answerOrClose(APIError(.badRequest, "malformedRequest", "the request head is not HTTP/1.1: \(error)"))
        }
        return true
    }

    /// A request head was read (``RequestGuard``), and its answer is due.
    func requestStarted() {
        responsesInFlight += 1
        if phase == .head || phase == .idle { leaveHead() }
    }

    /// A request was read to its end (``RequestGuard``): the connection waits for the next head.
    func requestEnded() {
        if phase == .request { phase = .idle }
    }

    /// An answer was written to its end (``RequestGuard``).
    func responseEnded() {
        responsesInFlight = max(0, responsesInFlight - 1)
    }

    /// Stops reading: the handler behind is answering and will call ``closeAfterAnswer()``.
    func stopReading() {
        phase = .closing
        timer?.cancel()
        timer = nil
    }

    /// Closes for output now and for good after ``lingering``.
    func closeAfterAnswer() {
        guard let context else { return }
        phase = .closing
        context.close(mode: .output, promise: nil)
        closer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingering) { self.close() }
    }

    // MARK: Answers

    private func answerOrClose(_ error: APIError) {
        if responsesInFlight == 0 {
            answer(error, lingering: true)
        } else {
            // Bytes of ours in the middle of a response being written would corrupt it.
            close()
        }
    }

    /// Writes `error` as a whole response and closes (lingering, or at once for a connection refused before it
    /// could send anything).
    private func answer(_ error: APIError, lingering: Bool) {
        guard let context else { return }
        stopReading()
        endFirstHead(decoded: false)
        let body = error.body
        var text =
            "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\n"
            + "Content-Type: application/json; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n"
        for field in error.headers { text += "\(field.name.rawName): \(field.value)\r\n" }
        text += "\r\n" + body
        let written = context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text)))
        written.assumeIsolated().whenComplete { _ in
            if lingering { self.closeAfterAnswer() } else { self.close() }
        }
    }

    private func close() {
        stopReading()
        context?.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stopping server waits for its connections to close; one that never sent its first head would keep
        // it waiting (the handlers that act on this event come only with the first request).
        if event is ChannelShouldQuiesceEvent, !isFirstHeadDecoded, phase != .closing { close() }
        context.fireUserInboundEventTriggered(event)
    }
}
