import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog
@testable import Projections

/// `audit(actor:)` reads an actor's events through the log's actor index: the answers are those a scan of the
/// log gives, from the writer, after a reopen, and from a read-only open.
@Suite(.onTestThreads) struct AuditByActorTests {
    /// Index files of 32 records, so that a few hundred events make several files and merges.
    static let configuration = EventLog.Configuration(
        batchSize: 4096, durability: .buffered(interval: .milliseconds(20)), actorIndexRunSize: 32)

    /// What the audit of `actor` must answer: every record of theirs, from a scan of the whole log.
    static func scanned(_ engine: Engine, actor: String) throws -> [AuditEntry] {
        try engine.store.read(from: .first, limit: .max).filter { $0.actor == actor }.map { record in
            AuditEntry(
                position: record.position, time: record.time, actor: record.actor, type: record.type,
                stream: record.stream.rawValue, event: try? EventEnvelope(record: record, keys: engine.store.keys))
        }
    }

    /// Every actor's audit against a scan; and the actor index, not the segments, gave every record of theirs up
    /// to `covered`.
    static func expectAuditsAgree(
        _ engine: Engine, covered: UInt64, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let log = try #require(engine.store as? EventLog, sourceLocation: sourceLocation)
        #expect(log.actorIndex.covered == covered, sourceLocation: sourceLocation)
        for actor in (0..<12).map({ "u\($0)" }) + ["system", "nobody"] {
            let expected = try scanned(engine, actor: actor)
            let served = log.actorIndex.servedRecords.load(ordering: .relaxed)
            #expect(try engine.audit(actor: actor, limit: .max) == expected, "\(actor)", sourceLocation: sourceLocation)
            #expect(
                log.actorIndex.servedRecords.load(ordering: .relaxed) - served
                    == expected.filter { $0.position.rawValue <= covered }.count,
                "\(actor): records from the index", sourceLocation: sourceLocation)
            // With more filters the index answers the matching part.
            let messages = expected.filter { $0.type == "MessageSent" }
            #expect(
                try engine.audit(actor: actor, type: "MessageSent", limit: .max) == messages, "\(actor) messages",
                sourceLocation: sourceLocation)
            #expect(
                try engine.audit(actor: actor, limit: 5) == Array(expected.prefix(5)), "\(actor) first five",
                sourceLocation: sourceLocation)
        }
    }

    @Test func anActorsAuditIsTheScansFromTheWriterAfterAReopenAndReadOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-audit-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var driver = RandomDriver(seed: 31)
        let covered: UInt64
        do {
            let engine = try Engine.open(directory: directory, configuration: Self.configuration)
            defer { try? engine.close() }
            for _ in 0..<1500 { await driver.step(engine) }
            let log = try #require(engine.store as? EventLog)
            covered = engine.position.rawValue / 32 * 32
            #expect(covered >= 256)
            #expect(log.actorIndex.waitUntilCovered(covered))
            try Self.expectAuditsAgree(engine, covered: covered)
        }
        do {
            let engine = try Engine.open(directory: directory, configuration: Self.configuration)
            defer { try? engine.close() }
            try Self.expectAuditsAgree(engine, covered: covered)
        }
        let log = try EventLog.openReadOnly(directory: directory)
        let reader = try Engine(store: log)
        defer { try? reader.close() }
        _ = try reader.audit(actor: "u0", limit: 1)  // a reader looks for the files at its first audit
        try Self.expectAuditsAgree(reader, covered: covered)
    }
}
