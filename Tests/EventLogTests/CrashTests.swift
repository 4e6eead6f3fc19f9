import Foundation
import Testing

@testable import EventLog

#if canImport(Glibc)
    import Glibc
#endif

/// SIGKILL a `parley crash-writer` child at random moments, over and over on one directory, and check that
/// every append it acknowledged survived, byte for byte.
@Suite struct CrashTests {
    static let rounds = 20
    static let segmentSize = 256 << 10

    @Test func everyAcknowledgedAppendSurvivesSigkillAndRecoveryOnTopOfRecovery() async throws {
        let executable = try parleyExecutable()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EventLog.Configuration(segmentSize: Self.segmentSize)
        var random = SplitMix64(seed: 0xC4A5_4001)
        var acknowledged: [UInt64: EventID] = [:]
        var checkedHead: UInt64 = 0
        var children = 0
        var tornTails = 0
        var droppedGroups = 0
        for round in 0..<Self.rounds {
            // Sometimes two children in a row: the second recovers the first's crash and is killed in turn.
            let runs = random.next() % 4 == 0 ? 2 : 1
            for _ in 0..<runs {
                children += 1
                // Now and then kill at once, while the child may still be opening (recovering) the log.
                let killAfter = random.next() % 8 == 0 ? 0 : 1 + Int(random.next() % 3000)
                let outcome = try await runCrashWriter(
                    executable, directory: directory, seed: 0xAB00 + UInt64(children), killAfter: killAfter)
                try #require(
                    outcome.wasKilled,
                    "round \(round): the child ended by itself (status \(outcome.status)): \(outcome.errorOutput)")
                for (position, id) in outcome.acknowledged {
                    if let earlier = acknowledged[position] {
                        #expect(earlier == id, "round \(round): position \(position) was acknowledged twice")
                    }
                    acknowledged[position] = id
                }
            }

            let log = try EventLog.open(directory: directory, configuration: configuration)
            if log.openReport.truncatedBytes > 0 { tornTails += 1 }
            if log.openReport.droppedRecords > 0 { droppedGroups += 1 }
            let head = log.head.rawValue
            let fresh = acknowledged.filter { $0.key > checkedHead }
            if let newest = fresh.keys.max() {
                #expect(newest <= head, "round \(round): acknowledged \(newest) but the head is \(head)")
            }
            for (position, id) in fresh.sorted(by: { $0.key < $1.key }) {
                let record = try log.record(at: Position(position))
                #expect(record?.id == id, "round \(round): position \(position)")
                if let record { expectMatchesCrashRecipe(record, "round \(round)") }
                #expect(try log.lookup(id: id)?.position == Position(position))
            }
            // Records written but not acknowledged may survive too; each must still be whole and in order.
            var next = checkedHead + 1
            try log.forEach(from: Position(checkedHead + 1)) { record in
                #expect(record.position.rawValue == next)
                next += 1
                expectMatchesCrashRecipe(record, "round \(round)")
            }
            #expect(next == head + 1)
            let report = try log.verify()
            #expect(report.problems == [], "round \(round)")
            #expect(report.records == head)

            // The log takes appends again, right after the recovered head.
            let own = CrashRecipe.proposed(id: EventID(high: 0, low: UInt64(round)))
            let result = try await log.append([own])
            #expect(result.positions == [Position(head + 1)])
            #expect(try log.record(at: Position(head + 1))?.payload == own.payload)
            acknowledged[head + 1] = own.id
            checkedHead = head + 1
            try log.close()
        }

        // A final clean open still holds every acknowledged record, from every round.
        let log = try EventLog.open(directory: directory, configuration: configuration)
        #expect(log.openReport.openedFromCheckpoint)
        #expect(log.head.rawValue == checkedHead)
        let positions = acknowledged.keys.sorted()
        let records = try log.records(at: positions.map { Position($0) })
        #expect(records.map { $0.id } == positions.map { acknowledged[$0]! })
        #expect(try log.verify().problems == [])
        let segments = log.stats().segments
        try log.close()
        #expect(acknowledged.count > Self.rounds * 100, "the children acknowledged too little to mean much")
        #expect(segments > 3, "segments should have rolled")
        print(
            "crash test: \(children) children killed, \(acknowledged.count) acknowledged records, \(segments) segments, "
                + "\(tornTails) recoveries cut a torn tail, \(droppedGroups) dropped a torn multi-batch append")
    }

    private func expectMatchesCrashRecipe(
        _ record: Record, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let proposed = CrashRecipe.proposed(id: record.id)
        #expect(
            record.stream == proposed.stream, "\(what): stream at \(record.position)", sourceLocation: sourceLocation)
        #expect(record.type == proposed.type, "\(what): type at \(record.position)", sourceLocation: sourceLocation)
        #expect(record.actor == proposed.actor, "\(what): actor at \(record.position)", sourceLocation: sourceLocation)
        #expect(
            record.payload == proposed.payload, "\(what): payload at \(record.position)", sourceLocation: sourceLocation
        )
    }
}

/// The crash writer's derivation of a record from its id: the same as `CrashRecord` in
/// `Sources/EngineCLI/CrashWriterCommand.swift`, kept in step by hand (any drift fails the crash test).
enum CrashRecipe {
    static func proposed(id: EventID) -> ProposedRecord {
        var random = SplitMix64(seed: id.high &* 0xD6E8_FEB8_6659_FD93 ^ id.low)
        let producer = id.low >> 48
        let first = random.next()
        let length: Int
        if producer == 0 {
            length = 200
        } else if first % 16 == 0 {
            length = 1000 + Int((first >> 8) % 7000)
        } else {
            length = Int((first >> 8) % 300)
        }
        return ProposedRecord(
            id: id, stream: StreamName("crash:\((first >> 24) % 50)"), type: producer == 0 ? "Bulk" : "Small",
            actor: "p\(producer)", payload: random.bytes(length))
    }
}

/// What one crash-writer child acknowledged before it was killed.
struct CrashWriterOutcome: Sendable {
    var acknowledged: [(UInt64, EventID)]
    var wasKilled: Bool
    var status: Int32
    var errorOutput: String
}

/// The `parley` executable built next to this test binary (`.build/<triple>/debug/parley`).
func parleyExecutable() throws -> URL {
    var starts = [URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath(), Bundle.main.bundleURL]
    if let executable = Bundle.main.executableURL { starts.append(executable) }
    for start in starts {
        var directory = start.deletingLastPathComponent()
        while directory.path != "/" && !directory.path.isEmpty {
            let candidate = directory.appendingPathComponent("parley")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
    }
    let message =
        "the parley executable was not found next to the test binary (\(CommandLine.arguments[0])); "
        + "build it with `swift build --build-tests` first"
    Issue.record(Comment(rawValue: message))
    throw CancellationError()
}

/// Runs `parley crash-writer` on `directory`, reads its `position id` lines as they come, and SIGKILLs it
/// once `killAfter` acknowledgements arrived (0: at once). Lines already in the pipe are acknowledged too.
func runCrashWriter(_ executable: URL, directory: String, seed: UInt64, killAfter: Int) async throws
    -> CrashWriterOutcome
{
    try await withCheckedThrowingContinuation { continuation in
        // A thread of its own: the reads block, and must not hold one of the few cooperative threads.
        let thread = Thread {
            continuation.resume(
                with: Result {
                    try runCrashWriterBlocking(executable, directory: directory, seed: seed, killAfter: killAfter)
                })
        }
        thread.start()
    }
}

private func runCrashWriterBlocking(_ executable: URL, directory: String, seed: UInt64, killAfter: Int) throws
    -> CrashWriterOutcome
{
    let errorPath = temporaryDirectory() + ".stderr"
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errorPath) }
    let process = Process()
    process.executableURL = executable
    process.arguments = [
        "crash-writer", "--data", directory, "--seed", String(seed), "--segment-size", String(CrashTests.segmentSize),
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle(forWritingAtPath: errorPath)
    try process.run()

    var killed = false
    func killChild() {
        if !killed && process.isRunning { kill(process.processIdentifier, SIGKILL) }
        killed = true
    }
    if killAfter == 0 { killChild() }
    let descriptor = output.fileHandleForReading.fileDescriptor
    var acknowledged: [(UInt64, EventID)] = []
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var malformed: String?
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        pending.append(contentsOf: chunk[0..<count])
        var lineStart = 0
        for index in pending.indices where pending[index] == UInt8(ascii: "\n") {
            let line = String(decoding: pending[lineStart..<index], as: UTF8.self)
            lineStart = index + 1
            let fields = line.split(separator: " ")
            if fields.count == 2, let position = UInt64(fields[0]), let id = EventID(String(fields[1])) {
                acknowledged.append((position, id))
            } else {
                malformed = malformed ?? line
            }
        }
        pending.removeFirst(lineStart)
        if acknowledged.count >= killAfter { killChild() }
    }
    // End of output: the child is dead (or ended by itself, which the caller reports). A partial last line,
    // cut by the kill, is simply not counted.
    process.waitUntilExit()
    if let malformed {
        Issue.record("crash-writer printed a malformed line: \(malformed)")
    }
    let errorOutput = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    return CrashWriterOutcome(
        acknowledged: acknowledged,
        wasKilled: process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL,
        status: process.terminationStatus, errorOutput: errorOutput)
}
