import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Behind the HTTP decoder of a connection that stays HTTP: refuses a request whose declared body is over
/// ``ServerConfiguration/maximumBodySize`` from its head (413, without waiting for a body that may never come),
/// writes the real answer to a refused WebSocket upgrade in place of Hummingbird's empty 400 (see
/// ``UpgradeRefusals``), and tells ``ConnectionGuard`` where requests and answers start and end.
final class RequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let maximumBodySize: Int
    let limits: ConnectionLimits
    let refusals: UpgradeRefusals

    private var connectionGuard: ConnectionGuard?
    /// A request was refused: the rest of it is dropped.
    private var isRefusing = false
    /// The refusal waits for the answers in flight before it.
    private var isRefusalDue = false
    /// Whether a request head came through here: the answer to a refused upgrade comes before any (the
    /// upgrade handler keeps the head to itself).
    private var hasSeenHead = false
    /// The body of the answer written in place of a refused upgrade's 400, written at its end.
    private var replacementBody: ByteBuffer?

    init(maximumBodySize: Int, limits: ConnectionLimits, refusals: UpgradeRefusals) {
        self.maximumBodySize = maximumBodySize
        self.limits = limits
        self.refusals = refusals
    }

    func handlerAdded(context: ChannelHandlerContext) {
        connectionGuard = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !isRefusing else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            if let declared = head.headerFields[.contentLength].flatMap({ Int($0) }), declared > maximumBodySize {
                limits.record(.bodyTooLarge)
                isRefusing = true
                connectionGuard?.stopReading()
                if (connectionGuard?.responsesInFlight ?? 0) == 0 {
                    refuse(context)
                } else {
                    isRefusalDue = true
                }
                return
            }
            hasSeenHead = true
            connectionGuard?.requestStarted()
        case .body:
            break
        case .end:
            connectionGuard?.requestEnded()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if !hasSeenHead, response.status == .badRequest, let refusal = refusals.take(for: context.channel) {
                let body = ByteBuffer(string: refusal.body)
                var fields: HTTPFields = [
                    .contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes),
                    .connection: "close",
                ]
                fields.append(contentsOf: refusal.headers)
                replacementBody = body
                context.write(
                    wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: fields))), promise: promise
                )
                return
            }
            context.write(data, promise: promise)
        case .body:
            // The refused upgrade's 400 has no body; should one come, it is not the answer's.
            guard replacementBody == nil else {
                promise?.succeed()
                return
            }
            context.write(data, promise: promise)
        case .end:
            if let body = replacementBody {
                replacementBody = nil
                context.write(wrapOutboundOut(.body(body)), promise: nil)
            }
            context.write(data, promise: promise)
            connectionGuard?.responseEnded()
            if isRefusalDue, (connectionGuard?.responsesInFlight ?? 0) == 0 {
                isRefusalDue = false
                refuse(context)
            }
        }
    }

    /// Answers 413 and closes the connection: its body is not read.
    private func refuse(_ context: ChannelHandlerContext) {
        let body = ByteBuffer(string: APIError.bodyTooLarge.body)
        let head = HTTPResponse(
            status: .contentTooLarge,
            headerFields: [
                .contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes),
                .connection: "close",
            ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let connectionGuard = connectionGuard
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            connectionGuard?.closeAfterAnswer()
        }
    }
}
