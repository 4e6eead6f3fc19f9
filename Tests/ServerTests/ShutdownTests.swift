import EventLog
import Foundation
import HTTPTypes
import NIOCore
import ParleyTestSupport
import Projections
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `parley serve` as a process: SIGTERM in the middle of a stream of commands.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct ShutdownTests {
    static func post(_ client: HTTPWire, _ path: String, user: String, json: String) async throws -> WireResponse {
        try await post(client, path, authorization: "Bearer " + (try await token(user)), json: json)
    }

    /// With a token made beforehand: on a loaded machine, minting one while a fresh connection waits for its first
    /// request can take longer than the server's 10 s for a request head, and the server closes it.
    static func post(_ client: HTTPWire, _ path: String, authorization: String, json: String) async throws
        -> WireResponse
    {
        try await client.request(
            .post, path, headers: [.authorization: authorization, .contentType: "application/json"], body: json)
    }

    /// Every command the server acknowledged before and during the stop is in the log, and the log was
    /// closed cleanly (the next open reads its checkpoint, with nothing to recover).
    @Test func sigtermUnderLoadKeepsEveryAcknowledgedCommand() async throws {
        let server = try await ServeProcess()
        let senders = 16
        var authorizations: [String] = []
        for index in 0..<senders { authorizations.append("Bearer " + (try await token("u\(index)"))) }
        let setup = try HTTPWire(port: server.port)
        for index in 0..<senders {
            let answer = try await Self.post(
                setup, "/v1/users", authorization: authorizations[index],
                json: #"{"method":"email","email":"u\#(index)@example.com"}"#)
            #expect(answer.status == 201)
        }
        let members = (1..<senders).map { "\"u\($0)\"" }.joined(separator: ",")
        let room = try await Self.post(
            setup, "/v1/rooms", authorization: authorizations[0],
            json: #"{"room":"load","name":"Load","members":[\#(members)]}"#)
        #expect(room.status == 201)
        // The server makes the room's id from its creator and the client's own id for it.
        let load = RoomID.named("load", by: "u0", kind: .group).rawValue
        #expect(room.body == #"{"room":"\#(load)"}"#)

        // A live client, to be closed with 1001 when the server stops.
        let watcher = try await WebSocketWire(port: server.port, token: try await token("u1"))
        try await watcher.subscribe("room:\(load)")
        let acknowledged = PlainMutex<[String]>([])
        let refused = PlainMutex<[Int]>([])
        let port = server.port
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                group.addTask {
                    let authorization = "Bearer " + (try await token("u\(sender)"))
                    let client = try HTTPWire(port: port)
                    for index in 0..<100_000 {
                        let id = "u\(sender)-\(index)"
                        guard
                            let answer = try? await client.request(
                                .post, "/v1/rooms/\(load)/messages",
                                headers: [.authorization: authorization, .contentType: "application/json"],
                                body: #"{"id":"\#(id)","body":"load \#(index)"}"#)
                        else { return }
                        guard answer.status == 201 else {
                            refused.withLock { $0.append(answer.status) }
                            return
                        }
                        acknowledged.withLock { $0.append(id) }
                    }
                }
            }
            group.addTask {
                // Stop it in the middle of the stream, once it is flowing (bounded on a slow machine).
                let deadline = ContinuousClock.now + .seconds(60)
                while acknowledged.withLock({ $0.count }) < 300, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                server.identity.signal(SIGTERM)
            }
            try await group.waitForAll()
        }
        // The live client got its changes, then the 1001 close.
        var closeCode: Int?
        while closeCode == nil {
            if case .close(let code) = try await watcher.receive() { closeCode = code }
        }
        #expect(closeCode == 1001)
        let status = try await server.waitForExit(within: .seconds(30))
        #expect(status == 0, "\(server.errorOutput)")
        #expect(server.errorOutput.contains("the log is closed cleanly"), "\(server.errorOutput)")
        // Requests after the stop began are refused with 503 or find the connection closed, never a 500.
        #expect(refused.withLock { $0 }.allSatisfy { $0 == 503 }, "\(refused.withLock { $0 })")
        let ids = acknowledged.withLock { $0 }
        #expect(ids.count >= 300, "the load ran: \(ids.count) acknowledged")

        let log = try EventLog.open(directory: server.dataPath)
        #expect(log.openReport.openedFromCheckpoint, "closed cleanly: \(log.openReport.notes)")
        #expect(log.openReport.notes.isEmpty && log.openReport.droppedRecords == 0)
        let engine = try Engine(store: log)
        defer { try? engine.close() }
        let missing = ids.filter { engine.message(MessageID($0), in: RoomID(load)) == nil }
        #expect(missing.isEmpty, "\(missing.count) acknowledged messages missing, first \(missing.prefix(3))")
    }
}
