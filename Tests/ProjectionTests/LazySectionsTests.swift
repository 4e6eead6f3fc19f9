import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

/// An engine opened with `loadsSectionsLazily` on a snapshot at the head decodes each projection when first
/// needed, and answers exactly as an engine that decoded everything.
@Suite(.onTestThreads) struct LazySectionsTests {
    static let lazily = Engine.Options(snapshots: .manual, loadsSectionsLazily: true)

    /// A log of `steps` random commands with a snapshot at its head; returns its digest and sample answers.
    func makeLog(_ directory: String, seed: UInt64, steps: Int = 1200) async throws -> (String, String, RandomDriver) {
        var driver = RandomDriver(seed: seed)
        let engine = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? engine.close() }
        for _ in 0..<steps { await driver.step(engine) }
        try engine.writeSnapshot()
        return (try engine.stateDigest, try sampleAnswers(engine), driver)
    }

    func temporaryDirectory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(name)-\(UUID())").path
    }

    func missing(_ engine: Engine) -> ProjectionSections {
        ProjectionSections(rawValue: engine.missingSections.load(ordering: .acquiring))
    }

    @Test func eachQueryDecodesOnlyTheSectionsItReads() async throws {
        let directory = temporaryDirectory("lazy")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (digest, answers, _) = try await makeLog(directory, seed: 21)
        let full = try Engine.open(directory: directory, configuration: testConfiguration)
        let expectedAudit = try full.audit(actor: "u3")
        let expectedProfile = try full.profile("u3")
        try full.close()

        let log = try EventLog.open(directory: directory, configuration: testConfiguration)
        let engine = try Engine(store: log, options: Self.lazily)
        defer { try? engine.close() }
        #expect(engine.openReport.snapshotPosition == log.head)
        #expect(engine.openReport.foldedRecords == 0)
        #expect(missing(engine) == .all)
        #expect(try engine.profile("u3") == expectedProfile)
        #expect(missing(engine) == [.graph, .chat, .activities, .gratitude, .audit])
        _ = try engine.friends("u3")
        #expect(missing(engine) == [.chat, .activities, .gratitude, .audit])
        #expect(try engine.audit(actor: "u3") == expectedAudit)
        #expect(missing(engine) == [.chat, .activities, .gratitude])
        #expect(try sampleAnswers(engine) == answers)
        #expect(try engine.stateDigest == digest)
        #expect(missing(engine) == [])
        #expect(engine.lazySections.withLock { $0 == nil })
        #expect(engine.notes.isEmpty)
    }

    @Test func commandsOnALazyEngineAreCheckedAgainstEverySection() async throws {
        let directory = temporaryDirectory("lazy-commands")
        let copy = directory + "-copy"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: copy)
        }
        var (_, _, driver) = try await makeLog(directory, seed: 22)
        try FileManager.default.copyItem(atPath: directory, toPath: copy)
        var same = driver

        let full = try Engine.open(directory: directory, configuration: testConfiguration)
        defer { try? full.close() }
        let lazy = try Engine(
            store: try EventLog.open(directory: copy, configuration: testConfiguration), options: Self.lazily)
        defer { try? lazy.close() }
        #expect(missing(lazy) == .all)
        let (accepted, rejected) = (driver.accepted, driver.rejected)
        for _ in 0..<400 {
            await driver.step(full)
            await same.step(lazy)
        }
        #expect(missing(lazy) == [])
        #expect(same.accepted == driver.accepted && same.rejected == driver.rejected)
        #expect(driver.accepted > accepted + 50 && driver.rejected > rejected + 50)
        // New rooms and messages get fresh random ids, so the two logs differ in ids: each engine's state must be
        // its own log's, and every command must have been judged alike.
        #expect(try lazy.stateDigest == lazy.replayDigest())
        #expect(try full.stateDigest == full.replayDigest())
    }

    @Test func aSnapshotWithATailIsDecodedWhole() async throws {
        let directory = temporaryDirectory("lazy-tail")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var (_, _, driver) = try await makeLog(directory, seed: 23, steps: 600)
        let digest: String
        do {
            let engine = try Engine.open(
                directory: directory, configuration: testConfiguration, options: .init(snapshots: .manual))
            defer { try? engine.close() }
            for _ in 0..<200 { await driver.step(engine) }
            digest = try engine.stateDigest
        }
        let engine = try Engine(
            store: try EventLog.open(directory: directory, configuration: testConfiguration), options: Self.lazily)
        defer { try? engine.close() }
        #expect(engine.openReport.foldedRecords > 0)
        #expect(missing(engine) == [])
        #expect(try engine.stateDigest == digest)
    }

    @Test func aDamagedSectionFoldsTheLogInstead() async throws {
        let directory = temporaryDirectory("lazy-damaged")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (digest, answers, _) = try await makeLog(directory, seed: 24)
        let full = try Engine.open(directory: directory, configuration: testConfiguration)
        let expectedAudit = try full.audit(actor: "u5")
        let position = full.position
        try full.close()
        // The audit is the last part: a flipped bit near the end of the file is in it.
        let path = directory + "/" + snapshotFileName(position)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count - 3] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let engine = try Engine(
            store: try EventLog.openReadOnly(directory: directory, configuration: testConfiguration),
            options: Self.lazily)
        defer { try? engine.close() }
        #expect(engine.openReport.snapshotPosition == position)
        _ = try engine.profile("u5")
        #expect(missing(engine).contains(.audit))
        #expect(try engine.audit(actor: "u5") == expectedAudit)
        #expect(missing(engine) == [])
        #expect(engine.notes.count == 1)
        #expect(engine.notes.first?.contains("checksum mismatch in part audit") == true)
        #expect(try engine.stateDigest == digest)
        #expect(try sampleAnswers(engine) == answers)
    }

    @Test func aSectionStaysReadableAfterANewerSnapshotRemovesItsFile() async throws {
        let directory = temporaryDirectory("lazy-removed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var (digest, answers, driver) = try await makeLog(directory, seed: 25)
        let writer = try Engine.open(
            directory: directory, configuration: testConfiguration, options: .init(snapshots: .manual))
        defer { try? writer.close() }
        let first = writer.position
        let reader = try Engine(
            store: try EventLog.openReadOnly(directory: directory, configuration: testConfiguration),
            options: Self.lazily)
        defer { try? reader.close() }
        #expect(reader.openReport.snapshotPosition == first)
        for _ in 0..<2 {
            for _ in 0..<100 { await driver.step(writer) }
            try writer.writeSnapshot()
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + snapshotFileName(first)))
        #expect(try writer.stateDigest != digest)
        // The reader still answers at the position it opened at, from the file it opened.
        #expect(try sampleAnswers(reader) == answers)
        #expect(try reader.stateDigest == digest)
        #expect(reader.notes.isEmpty)
        #expect(reader.position == first)
        digest = try writer.stateDigest
        #expect(try digest != reader.stateDigest)
    }
}
