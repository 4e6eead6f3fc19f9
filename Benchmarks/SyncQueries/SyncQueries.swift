import Benchmark
import EventLog
import Foundation
import Projections
import Synchronization
import Workloads

// The sync call of a cold start or a reconnect (`GET /v1/me/sync?since=P`) in process: `Engine.sync` for a user in
// 10, 100, 1,000 and 10,000 direct rooms after a position P, with 10 of those rooms changed after P (and 1,000
// messages elsewhere), and its answer encoded to JSON as the route encodes it. The data is `SyncWorkload`
// (Sources/Workloads), built afresh in $TMPDIR by each benchmark's setup and removed by its teardown. A full sync
// (P = 0) of 1,000 rooms is measured beside them: what a first start costs.

/// The workload a benchmark's setup builds and its teardown closes.
final class SharedWorkload: Sendable {
    private let slot = Mutex<(workload: SyncWorkload, directory: String)?>(nil)

    func build(rooms: Int) async throws {
        let directory = NSTemporaryDirectory() + "parley-sync-bench-\(rooms)-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        let workload = try await SyncWorkload.build(in: directory, rooms: rooms, changed: changedRooms)
        let rows = try workload.changedRows()
        guard rows == changedRooms else { fatalError("a sync after P answers \(rows) rows, expected \(changedRooms)") }
        slot.withLock { $0 = (workload, directory) }
    }

    func close() async throws {
        let taken = slot.withLock { slot in
            defer { slot = nil }
            return slot
        }
        guard let taken else { return }
        try await taken.workload.close()
        try? FileManager.default.removeItem(atPath: taken.directory)
    }

    var workload: SyncWorkload {
        guard let workload = slot.withLock({ $0?.workload }) else { fatalError("no sync workload is built") }
        return workload
    }
}

let changedRooms = 10
let shared = SharedWorkload()

// Benchmark names have no spaces (see ProjectionHotPaths).
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 20,
        maxDuration: .seconds(5), maxIterations: 5_000)

    for rooms in [10, 100, 1_000, 10_000] {
        Benchmark("sync-user-in-\(rooms)-rooms-\(changedRooms)-changed", configuration: configuration) { benchmark in
            let workload = shared.workload
            benchmark.startMeasurement()
            let bytes = try workload.sync()
            benchmark.stopMeasurement()
            blackHole(bytes)
        } setup: {
            try await shared.build(rooms: rooms)
        } teardown: {
            try await shared.close()
        }
    }

    Benchmark("full-sync-user-in-1000-rooms", configuration: configuration) { benchmark in
        let workload = shared.workload
        benchmark.startMeasurement()
        let bytes = try workload.sync(since: Position(0))
        benchmark.stopMeasurement()
        blackHole(bytes)
    } setup: {
        try await shared.build(rooms: 1_000)
    } teardown: {
        try await shared.close()
    }
}
