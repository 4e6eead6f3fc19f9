import EventLog
import Foundation
import ParleyTestSupport
import Projections
import Testing
import Workloads

/// The sync benchmark's data: the rows a sync after its position answers are the changed ones, whatever the number
/// of rooms (the benchmark's timing is its own; nothing here is timed).
@Suite(.onTestThreads) struct SyncWorkloadTests {
    @Test(arguments: [(1, 1), (20, 3), (200, 10)])
    func aSyncAfterTheWorkloadsPositionAnswersTheChangedRoomsOnly(rooms: Int, changed: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sync-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let workload = try await SyncWorkload.build(in: directory, rooms: rooms, changed: changed, background: 50)
        #expect(try workload.changedRows() == changed)
        let answer = try workload.engine.sync(SyncWorkload.user, since: workload.since)
        #expect(answer.rooms.allSatisfy { $0.unread == 2 && $0.lastMessage?.preview.hasPrefix("news in room") == true })
        #expect(answer.removedRooms.isEmpty && answer.feed.isEmpty)
        let full = try workload.engine.sync(SyncWorkload.user)
        let list = try workload.engine.rooms(SyncWorkload.user)
        #expect(full.rooms.count == rooms && full.rooms == list)
        #expect(try workload.sync() > 0)
        try await workload.close()
    }
}
