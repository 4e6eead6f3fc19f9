import Foundation
import HTTPTypes
import ParleyTestSupport
import Projections
import Testing

@testable import Server

/// What arrives before a request is whole: a head that never comes or never ends, a head too large, a body
/// declared too large, and more connections than the server keeps.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ConnectionGuardTests {
    @Test func aConnectionThatSendsNothingIsClosedAtTheHeadTimeout() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(300) }
        try await harness.test { client in
            let silent = try WireSocket(port: client.port, timeoutSeconds: 20)
            #expect(try await silent.readToEnd() == "", "closed without an answer: nothing was asked")
            #expect(harness.server.connectionCounts.headTimeouts == 1)
            #expect(try await client.call(.get, "/healthz").status == 200)
            // /metrics shows the counts (the scrape's own connection is open; the /healthz one may be closing).
            let scrape = try await MetricsTests.scrape(try HTTPWire(port: client.port))
            #expect(scrape.value("parley_connections_closed_total", ["reason": "headTimeout"]) == 1)
            #expect(scrape.value("parley_connections_closed_total", ["reason": "tooMany"]) == 0)
            #expect((1...2).contains(scrape.value("parley_connections_open") ?? 0))
        }
    }

    @Test func aTrickledHeadIsAnswered408AtTheHeadTimeout() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(500) }
        try await harness.test { client in
            let slow = try WireSocket(port: client.port, timeoutSeconds: 20)
            // A byte every 50 ms keeps the connection busy, but the head would take 10 s to finish.
            let head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 200)
            let sentAll = try await slow.trickle(head + "\r\n\r\n", interval: .milliseconds(50))
            #expect(!sentAll, "the server answered before the head was done")
            let answer = try await slow.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains(#"{"error":{"code":"headTimeout","#), "\(answer)")
            #expect(harness.server.connectionCounts.headTimeouts == 1)
        }
    }

    @Test func aHeadOverTheLimitIsAnswered431() async throws {
        let harness = try await Harness()
        try await harness.test { client in
            let socket = try WireSocket(port: client.port, timeoutSeconds: 20)
            let head =
                "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + String(repeating: "a", count: 100 << 10)
                + "\r\n\r\n"
            try? socket.write(Array(head.utf8))
            let answer = try await socket.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 431"), "\(answer.prefix(200))")
            #expect(answer.contains(#"{"error":{"code":"headTooLarge","#), "\(answer)")
            #expect(harness.server.connectionCounts.headsTooLarge == 1)
            #expect(try await client.call(.get, "/healthz").status == 200)
        }
    }

    @Test func aDeclaredBodyOverTheLimitIsRefusedFromTheHead() async throws {
        let harness = try await Harness()
        try await seedWorld(harness.engine)
        // Made before the connection opens: on a loaded machine, minting it could outlast the head timeout.
        let bearer = try await token("alice")
        try await harness.test { client in
            let socket = try WireSocket(port: client.port, timeoutSeconds: 20)
            // 10 GB declared, one byte sent: the answer cannot wait for the body.
            let head =
                "POST /v1/rooms/r1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer \(bearer)\r\nContent-Type: application/json\r\n"
                + "Content-Length: 10000000000\r\n\r\n{"
            try socket.write(Array(head.utf8))
            let answer = try await socket.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer)")
            #expect(answer.contains(#"{"error":{"code":"tooLarge","#), "\(answer)")
            #expect(harness.engine.position.rawValue == 9, "nothing appended")
            #expect(harness.server.connectionCounts.bodiesTooLarge == 1)
        }
    }

    @Test func connectionsFromOnePeerAreCapped() async throws {
        let harness = try await Harness {
            $0.maximumOpenConnectionsPerPeer = 3
            $0.headTimeout = .seconds(2)
        }
        try await harness.test { client in
            let sockets = try (0..<4).map { _ in try WireSocket(port: client.port, timeoutSeconds: 20) }
            var answers: [String] = []
            for socket in sockets { answers.append(try await socket.readToEnd()) }
            // Whichever the server took last is refused at once; the others wait for their heads in vain.
            let refused = answers.filter { $0.hasPrefix("HTTP/1.1 503") }
            #expect(refused.count == 1, "\(answers)")
            #expect(refused.first?.contains(#"{"error":{"code":"tooManyConnections","#) == true, "\(answers)")
            #expect(answers.filter(\.isEmpty).count == 3, "\(answers)")
            let counts = harness.server.connectionCounts
            #expect(counts.refused == 1 && counts.headTimeouts == 3, "\(counts)")
        }
    }

    @Test func atTheLimitTheOldestConnectionWithoutAHeadMakesRoom() async throws {
        // A head timeout no busy machine reaches during the test: the idle sockets must still be open when the
        // request comes.
        let harness = try await Harness {
            $0.maximumOpenConnections = 3
            $0.maximumOpenConnectionsPerPeer = 0
            $0.headTimeout = .seconds(60)
        }
        try await harness.test { client in
            let silent = try (0..<3).map { _ in try WireSocket(port: client.port, timeoutSeconds: 20) }
            // The server takes connections on more than one event loop: the request's must come after all three.
            let deadline = ContinuousClock.now + .seconds(20)
            while harness.server.connectionCounts.open < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            // Three idle sockets fill the server; a real request still gets through, and one of them goes (the
            // one the server took first), closed without an answer.
            #expect(try await client.call(.get, "/healthz").status == 200)
            #expect(harness.server.connectionCounts.evicted == 1)
            let closed = { silent.filter(\.isClosedByPeer).count }
            while closed() < 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(closed() == 1)
            let counts = harness.server.connectionCounts
            #expect(counts.evicted == 1 && counts.headTimeouts == 0 && counts.refused == 0, "\(counts)")
        }
    }

    @Test func anIdleKeepAliveConnectionOutlivesTheHeadTimeout() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(200) }
        try await harness.test { client in
            let wire = try HTTPWire(port: client.port)
            #expect(try await wire.request(.get, "/healthz", headers: [:], body: nil).status == 200)
            // Idle between requests is not an unfinished head: the head timeout must not fire here.
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await wire.request(.get, "/healthz", headers: [:], body: nil).status == 200)
            #expect(harness.server.connectionCounts.headTimeouts == 0)
        }
    }

    /// The tests' HTTP client, as others do, opens a new connection when the server closed its idle one (here:
    /// a fresh connection past the head timeout, as on a loaded machine between a connect and its first request).
    @Test func theTestClientReplacesAConnectionTheServerClosed() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(200) }
        try await harness.test { client in
            let wire = try HTTPWire(port: client.port)
            let first = wire.socket
            try await Task.sleep(for: .milliseconds(600))
            #expect(harness.server.connectionCounts.headTimeouts == 1)
            #expect(try await wire.request(.get, "/healthz", headers: [:], body: nil).status == 200)
            #expect(wire.socket !== first)
        }
    }

    @Test func lineEndsAfterARequestStartNoHead() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(200) }
        try await harness.test { client in
            let wire = try HTTPWire(port: client.port)
            #expect(try await wire.request(.get, "/healthz", headers: [:], body: nil).status == 200)
            // What an old client sends after a body; HTTP/1.1 says to skip it, not to wait for a head.
            try wire.socket.write(Array("\r\n".utf8))
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await wire.request(.get, "/healthz", headers: [:], body: nil).status == 200)
            #expect(harness.server.connectionCounts.headTimeouts == 0)
        }
    }

    @Test func aLiveConnectionOutlivesTheHeadTimeout() async throws {
        let harness = try await Harness { $0.headTimeout = .milliseconds(200) }
        try await seedWorld(harness.engine)
        try await harness.test { client in
            let live = try await client.live(as: "alice")
            try await Task.sleep(for: .milliseconds(600))
            try await live.subscribe("rooms")
            let frames = try await live.catchUp()
            #expect(frames.last?.type == "caughtUp", "\(frames.map(\.type))")
            #expect(harness.server.connectionCounts.headTimeouts == 0)
        }
    }
}
