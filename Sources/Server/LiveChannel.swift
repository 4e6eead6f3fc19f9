import EventLog
import Foundation
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import Projections

/// A frame a live client sends.
struct ClientFrame: Decodable {
    var type: String
    var token: String?
    var topic: String?
    var since: UInt64?
}

/// One WebSocket client of `/v1/live`. The protocol (JSON text frames):
/// - A client that could not send an `Authorization` header (a browser) sends `{"type":"auth","token":…}`
///   first, within ``ServerConfiguration/authenticationTimeout``; the token never appears in a URL.
/// - `{"type":"subscribe","topic":"rooms"|"feed"|"room:<id>","since":P?}`: the server answers with the
///   changes after P (or the whole current view without `since`), then `caughtUp`, then live changes in
///   log order, each with its `position`. `{"type":"unsubscribe","topic":…}` stops one.
/// - A client too slow to take its changes is closed with 4000; a stopping server closes with 1001; a
///   connection whose token expires is closed with 4001 (reason: `token expired: sign in again and subscribe
///   since P`, P the last position it was sent). Each way the client reconnects (with a fresh token after
///   4001) and subscribes `since` the last position it received, and misses nothing.
struct LiveChannel: Sendable {
    let hub: LiveHub
    let engine: Engine
    let verifier: TokenVerifier
    let configuration: ServerConfiguration

    static let slowCode = WebSocketErrorCode(codeNumber: 4000)
    static let expiredCode = WebSocketErrorCode(codeNumber: 4001)
    static let unauthorizedCode = WebSocketErrorCode(codeNumber: 4401)
    static let suspendedCode = WebSocketErrorCode(codeNumber: 4403)
    static let limitCode = WebSocketErrorCode(codeNumber: 4429)

    func serve(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, identity: Identity?, expires: Date?,
        channel: any Channel
    ) async throws {
        var messages = inbound.messages(maxSize: configuration.maximumFrameSize).makeAsyncIterator()
        var identity = identity
        var expires = expires
        if identity == nil {
            // Without a header the first frame must authenticate, in time.
            let deadline = channel.eventLoop.scheduleTask(
                in: .nanoseconds(configuration.authenticationTimeout.nanoseconds)
            ) {
                channel.close(promise: nil)
            }
            defer { deadline.cancel() }
            if case .text(let text) = try await messages.next(),
                let frame = try? JSONDecoder().decode(ClientFrame.self, from: Data(text.utf8)), frame.type == "auth",
                let token = frame.token
            {
                let verified = await verifier.verify(token: token)
                // An erased user's tokens open nothing (their signature still verifies until they expire).
                if let verified, case let standing = engine.standing(of: verified.identity.user), !standing.isErased,
                    standing.suspendedUntil == nil
                {
                    identity = verified.identity
                    expires = verified.expires
                }
            }
            guard identity != nil else {
                try await outbound.close(Self.unauthorizedCode, reason: "a valid token is required")
                return
            }
            deadline.cancel()
        }
        guard let identity else { return }
        let connection: LiveConnection
        do {
            connection = try hub.connect(user: identity.user, channel: channel)
        } catch .stopping {
            try await outbound.close(.goingAway, reason: "the server is stopping")
            return
        } catch .tooManyForUser {
            try await outbound.close(
                Self.limitCode, reason: "at most \(configuration.maximumConnectionsPerUser) live connections per user")
            return
        } catch .tooMany {
            try await outbound.close(.goingAway, reason: "the server holds all the live connections it can")
            return
        }
        // A client may send a few frames a second (subscriptions are cheap to ask for, not to serve).
        let limiter = RateLimiter(
            rate: configuration.clientFramesPerSecond, burst: configuration.clientFramesPerSecond * 4)
        defer { hub.disconnect(connection) }
        // The connection lives as long as its token: then it ends, and its writer closes it with 4001.
        let expiry = expires.map { date in
            Task {
                do {
                    try await Task.sleep(for: .seconds(max(0, date.timeIntervalSinceNow)))
                } catch {
                    return
                }
                connection.end(.expired)
            }
        }
        defer { expiry?.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await write(connection, outbound) }
            do {
                while let message = try await messages.next() {
                    if let wait = limiter.take(connection.user) {
                        _ = connection.enqueue(
                            Frames.error("rateLimited", "too many frames from this client; wait \(wait) s"))
                        continue
                    }
                    guard case .text(let text) = message else {
                        _ = connection.enqueue(Frames.error("badFrame", "send JSON text frames"))
                        continue
                    }
                    handle(text, from: connection)
                }
            } catch {
                // A frame over the limit or a broken connection: the connection ends.
            }
            connection.end(.gone)
            try await group.waitForAll()
        }
    }

    /// Sends queued frames until the connection ends, then closes it with the code its ending calls for.
    private func write(_ connection: LiveConnection, _ outbound: WebSocketOutboundWriter) async throws {
        while let frame = await connection.next() {
            try await outbound.write(.text(frame))
            hub.metrics.framesSent.increment()
        }
        switch connection.ending {
        case .slow:
            hub.metrics.slowClosed.increment()
            try? await outbound.close(
                Self.slowCode, reason: "too slow: reconnect and subscribe since the last position you received")
        case .stopping:
            try? await outbound.close(
                .goingAway, reason: "server stopping: reconnect and subscribe since the last position you received")
        case .expired:
            let since = connection.deliveredPosition.map { " since \($0)" } ?? ""
            try? await outbound.close(Self.expiredCode, reason: "token expired: sign in again and subscribe" + since)
        case .erased:
            try? await outbound.close(Self.unauthorizedCode, reason: "erased: this account was deleted")
        case .suspended:
            try? await outbound.close(Self.suspendedCode, reason: "suspended by a moderator")
        case .gone, nil:
            break
        }
    }

    private func handle(_ text: String, from connection: LiveConnection) {
        guard let frame = try? JSONDecoder().decode(ClientFrame.self, from: Data(text.utf8)) else {
            _ = connection.enqueue(
                Frames.error("malformedJSON", "send {\"type\":\"subscribe\",\"topic\":\"rooms\",\"since\":0}"))
            return
        }
        switch frame.type {
        case "subscribe", "unsubscribe":
            guard let name = frame.topic, let topic = Topic(name: name, user: connection.user) else {
                _ = connection.enqueue(
                    Frames.error(
                        "unknownTopic", "topics are rooms, feed and room:<id>", topicName: frame.topic ?? ""))
                return
            }
            if frame.type == "unsubscribe" {
                hub.unsubscribe(connection, from: topic)
                return
            }
            if case .messages(let room) = topic, !engine.isMember(connection.user, of: room) {
                _ = connection.enqueue(Frames.error("notFound", "no room \(room.rawValue) among yours", topic: topic))
                return
            }
            guard !connection.topics.contains(topic) else {
                _ = connection.enqueue(Frames.error("alreadySubscribed", "already subscribed", topic: topic))
                return
            }
            guard connection.add(topic, limit: configuration.maximumSubscriptions) else {
                _ = connection.enqueue(
                    Frames.error(
                        "tooManySubscriptions",
                        "at most \(configuration.maximumSubscriptions) topics per connection", topic: topic))
                return
            }
            hub.subscribe(connection, to: topic, since: frame.since)
        case "auth":
            _ = connection.enqueue(Frames.error("alreadyAuthenticated", "this connection is signed in already"))
        default:
            _ = connection.enqueue(
                Frames.error("unknownType", "frame types are subscribe and unsubscribe (and auth first)"))
        }
    }
}
