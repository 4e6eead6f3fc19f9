import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing

@testable import Server

#if canImport(Glibc)
    import Glibc
#endif

/// A failed store is a 503 with a code; where the log lives on the server stays on the server.
@Suite(.timeLimit(.minutes(6)), .onTestThreads) struct StorageFailureAnswerTests {
    @Test func aStoreFailureIs503WithoutTheServersPaths() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-503-\(UUID())").path
        defer {
            SystemCallFaults.clear(under: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let log = try EventLog.open(directory: directory, configuration: testConfiguration)
        let harness = try await Harness(store: log)
        try await seedWorld(harness.engine)
        SystemCallFaults.inject(.write, under: directory, errno: ENOSPC)
        try await harness.test { client in
            let answer = try await client.call(.post, "/v1/rooms/r1/messages", as: "alice", json: #"{"body":"hi"}"#)
            #expect(answer.status == 503)
            #expect(answer.body.hasPrefix(#"{"error":{"code":"storage","#), "\(answer.body)")
            #expect(!answer.body.contains(directory) && !answer.body.contains(".seg"), "\(answer.body)")
        }
        try? harness.engine.close()
    }

    @Test func theAnswerToAStorageErrorNamesNoFile() {
        let error = ValidationError(
            storage: EventLogError(.noSpace, "write /srv/parley-data/00000001.seg at offset 4096: no space left"),
            doing: "appending")
        let answer = APIError(error)
        #expect(answer.status == .serviceUnavailable)
        #expect(answer.code == "storage")
        #expect(!answer.message.contains("/srv/parley-data"), "\(answer.message)")
        // The whole story is kept for the server's log.
        #expect(answer.logDetail?.contains("/srv/parley-data/00000001.seg") == true)
    }
}
