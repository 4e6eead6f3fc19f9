import EventLog
import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A burst of messages in one room whose members each have a device, through `parley serve --push-gateway`: what the
/// gateway must have got in the end, whatever happened meanwhile.
///
/// Senders u0 (who made the room) to u3, and members u4 to u6 who only read their phones: every message notifies
/// each of those. (A sender is not notified of the messages before their own: sending reads the room, and what a
/// member has read by the time a notification is worked out is not pushed.)
enum PushBurst {
    /// The members who send.
    static let senders = 0..<4
    /// The members who never send nor read: every message notifies each of them.
    static let readers = 4..<7
    /// Every member, each with an `fcm` device `uN-phone` (sent to the gateway).
    static let users = 7

    /// Signs the members up, makes the room and registers their devices through `port` (the writer's); the room's id.
    static func populate(port: Int) async throws -> String {
        // Tokens are made before the connection is opened: on a busy machine minting one can outlast the server's
        // 10 s for a request's head on a connection that waits meanwhile.
        var authorization: [String] = []
        for user in 0..<users { authorization.append("Bearer " + (try await token("u\(user)"))) }
        let client = try HTTPWire(port: port)
        for user in 0..<users {
            let answer = try await ShutdownTests.post(
                client, "/v1/users", authorization: authorization[user],
                json: #"{"method":"email","email":"u\#(user)@example.com"}"#)
            #expect(answer.status == 201, "\(answer.body)")
        }
        let members = (1..<users).map { "\"u\($0)\"" }.joined(separator: ",")
        let room = try await ShutdownTests.post(
            client, "/v1/rooms", authorization: authorization[0],
            json: #"{"room":"burst","name":"Burst","members":[\#(members)]}"#)
        #expect(room.status == 201, "\(room.body)")
        for user in 0..<users {
            let device = try await client.request(
                .put, "/v1/me/devices/u\(user)-phone",
                headers: [.authorization: authorization[user], .contentType: "application/json"],
                body: #"{"platform":"fcm","token":"fcm-token-of-u\#(user)","appID":"1:123:android:abc"}"#)
            #expect(device.status == 200, "\(device.body)")
        }
        return RoomID.named("burst", by: "u0", kind: .group).rawValue
    }

    /// The messages acknowledged so far, by id (`s<sender>-<n>`, also their text), and whether senders should stop.
    final class Acknowledged: Sendable {
        private let state = PlainMutex<(ids: [(sender: Int, id: String)], stop: Bool)>(([], false))
        var ids: [(sender: Int, id: String)] { state.withLock { $0.ids } }
        var count: Int { state.withLock { $0.ids.count } }
        var isStopped: Bool { state.withLock { $0.stop } }
        func append(_ sender: Int, _ id: String) { state.withLock { $0.ids.append((sender, id)) } }
        func stop() { state.withLock { $0.stop = true } }
    }

    /// Sends messages as member `sender` into `room`, each with its id as its text, until told to stop. With one
    /// port it stops at the first answer that is not an acknowledgement (the server was killed); with several it
    /// retries the message with its id (so that it lands once) on the node `Parley-Writer` names, or the other one.
    static func send(as sender: Int, room: String, ports: [Int], into acknowledged: Acknowledged) async {
        guard let authorization = try? await "Bearer " + token("u\(sender)") else { return }
        var port = ports[sender % ports.count]
        var client = try? HTTPWire(port: port)
        var number = 0
        while !acknowledged.isStopped {
            let id = "s\(sender)-\(number)"
            let answer = try? await client?.request(
                .post, "/v1/rooms/\(room)/messages",
                headers: [.authorization: authorization, .contentType: "application/json"],
                body: #"{"id":"\#(id)","body":"\#(id)"}"#)
            if let answer, answer.status == 201 || answer.status == 200 {
                acknowledged.append(sender, id)
                number += 1
                continue
            }
            guard ports.count > 1 else { return }
            if let writer = answer?.headers[HTTPField.Name("Parley-Writer")!],
                let named = Int(writer.split(separator: ":").last ?? "")
            {
                port = named
            } else {
                port = ports[(ports.firstIndex(of: port).map { $0 + 1 } ?? 0) % ports.count]
                try? await Task.sleep(for: .milliseconds(100))
            }
            client = try? HTTPWire(port: port)
        }
    }

    /// The notifications in `requests`, each with the request's `Idempotency-Key`.
    static func notifications(in requests: [WebhookReceiver.Request]) throws -> [(PushNotification, key: String?)] {
        try requests.map {
            (try JSONDecoder().decode(PushNotification.self, from: Data($0.body)), $0.headers["idempotency-key"])
        }
    }

    /// The notifications each of `acknowledged`'s messages makes to the members who never read, as "user text".
    static func expected(_ acknowledged: [(sender: Int, id: String)]) -> Set<String> {
        Set(acknowledged.flatMap { message in readers.map { "u\($0) \(message.id)" } })
    }

    /// The notifications in `requests`, as "user text".
    static func received(_ requests: [WebhookReceiver.Request]) -> Set<String> {
        Set(
            requests.compactMap { request in
                (try? JSONDecoder().decode(PushNotification.self, from: Data(request.body))).map {
                    "\($0.user.rawValue) \($0.body ?? "")"
                }
            })
    }

    /// Waits until `receiver` answered every one of `expected` (bounded: 2 minutes).
    static func waitForAnswers(_ receiver: WebhookReceiver, _ expected: Set<String>) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while !expected.isSubset(of: received(receiver.answered)), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// At least once, no loss, one key per notification: every one of `expected` answered, every request's
    /// `Idempotency-Key` its notification's id, and a notification sent again always with the same key, for the same
    /// event and device.
    static func check(_ receiver: WebhookReceiver, _ expected: Set<String>) throws {
        let answered = received(receiver.answered)
        let missing = expected.subtracting(answered).sorted()
        let summary =
            "of \(expected.count) notifications, \(missing.count) never answered (\(missing.prefix(3))); "
            + "\(receiver.requests.count) requests, \(receiver.answered.count) answered, e.g. \(answered.prefix(3))"
        #expect(missing.count == 0, "\(summary)")
        var byID: [String: PushNotification] = [:]
        var keys: [String: Set<String>] = [:]
        for (notification, key) in try notifications(in: receiver.requests) {
            #expect(key == notification.id)
            // The same id, the same event, recipient, device and text (the badge is worked out at each attempt).
            if let seen = byID[notification.id] {
                #expect(
                    seen.event == notification.event && seen.user == notification.user
                        && seen.device == notification.device && seen.body == notification.body
                        && seen.position == notification.position, "\(notification.id) changed")
            }
            byID[notification.id] = notification
            keys["\(notification.user.rawValue) \(notification.body ?? "")", default: []].insert(notification.id)
        }
        let twoKeys = keys.filter { $0.value.count > 1 }
        #expect(twoKeys.count == 0, "notifications sent under two keys: \(twoKeys.prefix(3))")
        let now = Int64(Date().timeIntervalSince1970)
        let secret = Array(PushLiveTests.secret.utf8)
        #expect(receiver.requests.allSatisfy { WebhookCheck.isValid($0, secret: secret, now: now, tolerance: 600) })
    }
}

/// `parley serve --push-gateway` as a process, SIGKILLed in the middle of a burst, and pushing to a gateway that is
/// down for a minute.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct PushCrashTests {
    @Test func sigkillMidBurstLosesNoNotification() async throws {
        let receiver = try await WebhookReceiver.start()
        // A slow gateway: notifications lag the burst, so the kill comes with requests unanswered and more after.
        receiver.answer(after: .milliseconds(100))
        let arguments = ["--webhook-max-delay", "1"]
        let first = try await PushLiveTests.serve(receiver, arguments)
        let room = try await PushBurst.populate(port: first.port)
        let acknowledged = PushBurst.Acknowledged()
        let port = first.port
        await withTaskGroup(of: Void.self) { group in
            for sender in PushBurst.senders {
                group.addTask { await PushBurst.send(as: sender, room: room, ports: [port], into: acknowledged) }
            }
            group.addTask {
                // Killed while messages flow and notifications are under way (bounded on a slow machine).
                let deadline = ContinuousClock.now + .seconds(60)
                while acknowledged.count < 300 || receiver.requests.count < 50, ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                first.identity.signal(SIGKILL)
            }
        }
        #expect(try await first.waitForExit(within: .seconds(30)) != nil)
        let messages = acknowledged.ids
        #expect(messages.count >= 300, "the burst ran: \(messages.count) acknowledged")

        // The same log again: the push subscription resumes from its stored position.
        receiver.answer(after: .zero)
        let second = try await PushLiveTests.serve(receiver, arguments, data: first.dataPath)
        let expected = PushBurst.expected(messages)
        try await PushBurst.waitForAnswers(receiver, expected)
        let errors = second.errorOutput
        try await second.expectCleanStop()
        try PushBurst.check(receiver, expected)
        if !PushBurst.expected(messages).isSubset(of: PushBurst.received(receiver.answered)) { print(errors) }
        try await receiver.stop()
        // The second run's log is in the first one's directory, removed with it.
        withExtendedLifetime(first) {}
    }

    /// The gateway is down for 60 s while messages keep coming: the subscription retries (each attempt against the
    /// refused port ends at the gateway client's 10 s connect timeout, then a backoff capped at 1 s by
    /// `--webhook-max-delay`: some 5 attempts; `--webhook-attempts` high enough that nothing is parked however fast
    /// they fail), and once the gateway is back it gets every notification, each device's in log order.
    @Test func aGatewayDownForAMinuteGetsEverythingAfterwardsInOrder() async throws {
        let receiver = try await WebhookReceiver.start()
        let server = try await PushLiveTests.serve(
            receiver, ["--webhook-max-delay", "1", "--webhook-attempts", "1000"])
        let room = try await PushBurst.populate(port: server.port)
        try await receiver.stop()
        let acknowledged = PushBurst.Acknowledged()
        // Tokens first, connections after (see ``PushBurst/populate(port:)``).
        var authorization: [String] = []
        for sender in PushBurst.senders { authorization.append("Bearer " + (try await token("u\(sender)"))) }
        let clients = try PushBurst.senders.map { _ in try HTTPWire(port: server.port) }
        // A message from each member every 5 s through the outage.
        let outage = ContinuousClock.now
        var round = 0
        while ContinuousClock.now - outage < .seconds(60) {
            for sender in PushBurst.senders {
                let id = "s\(sender)-\(round)"
                let answer = try await ShutdownTests.post(
                    clients[sender], "/v1/rooms/\(room)/messages", authorization: authorization[sender],
                    json: #"{"id":"\#(id)","body":"\#(id)"}"#)
                #expect(answer.status == 201, "\(answer.body)")
                acknowledged.append(sender, id)
            }
            round += 1
            try await Task.sleep(for: .seconds(5))
        }
        let retries = try await PushLiveTests.metric(
            #"parley_subscription_retries_total{subscription="push"}"#, port: server.port)
        #expect((retries ?? 0) >= 1, "retried through the outage: \(retries ?? 0)")
        #expect(
            try await PushLiveTests.metric(#"parley_subscription_parked{subscription="push"}"#, port: server.port) == 0)
        #expect(receiver.requests.isEmpty)

        try await receiver.restart()
        let expected = PushBurst.expected(acknowledged.ids)
        try await PushBurst.waitForAnswers(receiver, expected)
        try await server.expectCleanStop()
        try PushBurst.check(receiver, expected)
        // In order: each reader's notifications came in log order, none sent twice (nothing was cut off).
        let notifications = try PushBurst.notifications(in: receiver.requests).map(\.0)
        for user in PushBurst.readers {
            let positions = notifications.filter { $0.user.rawValue == "u\(user)" }.map(\.position)
            #expect(
                positions == positions.sorted() && Set(positions).count == positions.count, "u\(user): \(positions)")
        }
        try await receiver.stop()
    }
}

/// Two `parley serve --store` nodes on a three-server JetStream cluster, pushing to one gateway: the writer is
/// SIGKILLed in the middle of a burst, the other node takes over and resumes the push subscription from the position
/// stored in JetStream.
@Suite(.serialized, .timeLimit(.minutes(8)), .onTestThreads) struct ReplicatedPushTests {
    /// Whether the node on `port` writes (its `/v1/admin/stats`); false when it does not answer.
    static func writes(port: Int) async -> Bool {
        guard let client = try? HTTPWire(port: port),
            let answer = try? await client.request(
                .get, "/v1/admin/stats", headers: [.authorization: "Bearer " + (try await token("root", admin: true))],
                body: nil),
            answer.status == 200,
            let stats = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        else { return false }
        return stats["writes"] as? Bool == true
    }

    /// Waits until `condition` holds, for at most `limit`; whether it did.
    static func waitFor(_ limit: Duration, _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    @Test func sigkillOfTheWriterMidBurstLosesNoNotification() async throws {
        let cluster = try await NATSCluster.start(servers: 3)
        defer { cluster.stop() }
        let store = cluster.addresses.map(\.description).joined(separator: ",")
        let ports = try NATSCluster.freePorts(count: 2)
        let receiver = try await WebhookReceiver.start()
        // A slow gateway: notifications lag the burst, so the kill comes with requests unanswered and more after.
        receiver.answer(after: .milliseconds(10))
        func node(_ index: Int) async throws -> ServeProcess {
            try await PushLiveTests.serve(
                receiver,
                [
                    "--store", store, "--stream", "PUSHED", "--node", "node\(index)", "--advertise",
                    "http://127.0.0.1:\(ports[index])", "--lease", "1.5", "--webhook-max-delay", "1",
                ], listeningOn: ports[index])
        }
        let first = try await node(0)
        #expect(await Self.waitFor(.seconds(20)) { await Self.writes(port: ports[0]) }, "node0 never wrote")
        let room = try await PushBurst.populate(port: ports[0])
        let populated = try #require(try await PushLiveTests.metric("parley_log_position", port: ports[0]))
        let second = try await node(1)

        let acknowledged = PushBurst.Acknowledged()
        let traffic = Task {
            await withTaskGroup(of: Void.self) { group in
                for sender in PushBurst.senders {
                    group.addTask { await PushBurst.send(as: sender, room: room, ports: ports, into: acknowledged) }
                }
            }
        }
        // The writer is killed while messages flow and notifications are under way, once it stored a position past
        // 100 messages (bounded on a slow machine).
        var stored = 0.0
        _ = await Self.waitFor(.seconds(60)) {
            let position = #"parley_subscription_position{subscription="push"}"#
            stored = (try? await PushLiveTests.metric(position, port: ports[0])) ?? 0
            return acknowledged.count >= 300 && receiver.requests.count >= 50 && stored > populated + 100
        }
        first.identity.signal(SIGKILL)
        #expect(try await first.waitForExit(within: .seconds(10)) != nil)
        #expect(stored > populated + 100, "node0 stored \(stored)")
        #expect(await Self.waitFor(.seconds(30)) { await Self.writes(port: ports[1]) }, "node1 did not take over")
        let fromNode0 = receiver.requests.count
        let atTakeover = acknowledged.count
        _ = await Self.waitFor(.seconds(60)) { acknowledged.count >= atTakeover + 300 }
        acknowledged.stop()
        await traffic.value
        let messages = acknowledged.ids
        #expect(messages.count >= atTakeover + 300, "the burst went on after the takeover: \(messages.count)")

        // Every notification of every acknowledged message, from node0 before the kill or node1 after.
        receiver.answer(after: .zero)
        let expected = PushBurst.expected(messages)
        try await PushBurst.waitForAnswers(receiver, expected)
        second.identity.signal(SIGTERM)
        #expect(try await second.waitForExit(within: .seconds(30)) == 0)
        try PushBurst.check(receiver, expected)
        // Node1 resumed from the position node0 stored in JetStream: nothing it sent was at or before it.
        let fromNode1 = try PushBurst.notifications(in: Array(receiver.requests.dropFirst(fromNode0))).map(\.0.position)
        #expect(!fromNode1.isEmpty)
        #expect(
            fromNode1.allSatisfy { Double($0) > stored }, "node1 sent from \(fromNode1.min() ?? 0), stored \(stored)")
        try await receiver.stop()
    }
}
