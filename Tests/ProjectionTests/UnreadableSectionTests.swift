import EventLog
import Foundation
import ParleyTestSupport
import Synchronization
import Testing

@testable import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// A store that forwards to a log, and fails every fold's read (`forEachView`) while ``failsReads`` is set: a log
/// that cannot be folded, beside a snapshot that still opens.
final class UnfoldableStore: EventStore {
    let log: EventLog
    let failsReads = Atomic(false)

    init(_ log: EventLog) { self.log = log }

    var location: String { log.location }
    var keys: any KeyStore { log.keys }
    var head: Position { log.head }
    var headDigest: String { log.headDigest }
    func submit(
        _ records: [ProposedRecord], completion: @escaping @Sendable (Result<AppendResult, EventLogError>) -> Void
    ) { log.submit(records, completion: completion) }
    func read(from: Position, limit: Int) throws(EventLogError) -> [Record] { try log.read(from: from, limit: limit) }
    func forEachView(from: Position, _ body: (RecordView) throws -> Void) throws {
        if failsReads.load(ordering: .acquiring) {
            throw EventLogError(.io, "read \(log.location)/00000000000000000001.seg: Input/output error", errno: EIO)
        }
        try log.forEachView(from: from, body)
    }
    func records(at positions: [Position]) throws(EventLogError) -> [Record] { try log.records(at: positions) }
    func records(at positions: [Position], ofActor actor: String) throws(EventLogError) -> [Record] {
        try log.records(at: positions, ofActor: actor)
    }
    func readStream(_ stream: StreamName, from version: StreamVersion, limit: Int) throws(EventLogError) -> [Record] {
        try log.readStream(stream, from: version, limit: limit)
    }
    func lookup(id: EventID) throws(EventLogError) -> Record? { try log.lookup(id: id) }
    func waitForCommit(after position: Position) async -> Bool { await log.waitForCommit(after: position) }
    func verify() throws(EventLogError) -> VerificationReport { try log.verify() }
    func stats() -> LogStats { log.stats() }
    func close() throws(EventLogError) { try log.close() }
    func snapshotPositions() -> [Position] { log.snapshotPositions() }
    func readSnapshot(at position: Position) throws(EventLogError) -> [UInt8]? { try log.readSnapshot(at: position) }
    func openSnapshot(at position: Position) throws(EventLogError) -> (any SnapshotFile)? {
        try log.openSnapshot(at: position)
    }
    func writeSnapshot(_ bytes: [UInt8], at position: Position, keep: Int) throws(EventLogError) {
        try log.writeSnapshot(bytes, at: position, keep: keep)
    }
}

/// A lazily opened engine whose snapshot section cannot be read and whose log cannot be folded instead: the query
/// gets a `.storage` error (no crash), commands are refused (a server's `/readyz` fails), the sections that read
/// still answer, and once the log reads again everything does.
@Suite(.onTestThreads) struct UnreadableSectionTests {
    @Test func aSectionThatCannotBeReadNorRefoldedFailsItsQueriesNotTheProcess() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-unreadable-\(UUID())")
            .path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let expectedAudit: [AuditEntry]
        let position: Position
        do {
            let writer = try Engine.open(
                directory: directory, configuration: testConfiguration, options: .init(snapshots: .manual))
            for number in 0..<20 {
                try await writer.register(UserID("u\(number)"), method: .email, email: "u\(number)@example.com")
            }
            try await writer.requestFriend(from: "u1", to: "u2")
            try writer.writeSnapshot()
            expectedAudit = try writer.audit(actor: "u1")
            position = writer.position
            try writer.close()
        }
        // The audit is the snapshot's last part: a flipped bit near the end of the file is in it.
        let path = directory + "/" + snapshotFileName(position)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 3] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let store = UnfoldableStore(try EventLog.openReadOnly(directory: directory, configuration: testConfiguration))
        let engine = try Engine(store: store, options: .init(snapshots: .manual, loadsSectionsLazily: true))
        defer { try? engine.close() }
        #expect(engine.openReport.snapshotPosition == position)
        #expect(engine.commandRefusal == nil)
        store.failsReads.store(true, ordering: .releasing)

        let failure = #expect(throws: ValidationError.self) { try engine.audit(actor: "u1") }
        #expect(failure?.code == .storage)
        #expect(failure?.message.contains("the snapshot at \(position.rawValue) could not be read") == true)
        #expect(failure?.message.contains("checksum mismatch in part audit") == true)
        #expect(failure?.message.contains("the log could not be folded instead") == true)
        #expect(failure?.storageError?.errno == EIO)
        // Commands are refused with it (so is a server's readiness), and fail as a command does.
        #expect(engine.commandRefusal?.code == .storage)
        #expect(!engine.isAcceptingCommands)
        await #expect(throws: ValidationError.self) {
            try await engine.register("late", method: .email, email: "late@example.com")
        }
        // The sections that decode still answer: the engine lives and serves them.
        #expect(try engine.profile("u1")?.email == "u1@example.com")
        #expect(try engine.requests("u2").incoming == ["u1"])
        #expect(throws: ValidationError.self) { try engine.stateDigest }

        // The log reads again: the whole log is folded instead of the damaged section, and all is well.
        store.failsReads.store(false, ordering: .releasing)
        #expect(try engine.audit(actor: "u1") == expectedAudit)
        #expect(engine.commandRefusal == nil)
        #expect(try engine.stateDigest == engine.replayDigest())
        #expect(engine.notes.contains { $0.contains("the whole log was folded instead") })
    }
}
