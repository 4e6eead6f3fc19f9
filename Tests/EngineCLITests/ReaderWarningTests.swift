import Foundation
import ParleyTestSupport
import Projections
import Testing

/// Commands that only read say what they found that the writer would: a segment under another name is read by
/// its header, with a warning naming it; a cleanly closed log that lost its end is refused, as the writer does.
@Suite(.onTestThreads) struct ReaderWarningTests {
    /// A log of 40 registrations in several 4 KiB segments, closed cleanly.
    static func makeLog(_ sandbox: Sandbox) async throws {
        let engine = try Engine.open(
            directory: sandbox.data, configuration: .init(segmentSize: 4096), options: .init(snapshots: .manual))
        for number in 0..<40 {
            try await engine.register(
                UserID("u\(number)"), method: .email, email: "u\(number)@example.com",
                name: String(repeating: "n", count: 100))
        }
        try engine.close()
    }

    @Test func aRenamedSegmentIsReadWithAWarningNamingIt() async throws {
        let sandbox = try Sandbox()
        try await Self.makeLog(sandbox)
        let segments = try sandbox.segments()
        try #require(segments.count >= 2)
        let renamed = "00000000000000000002.seg"
        try FileManager.default.moveItem(atPath: sandbox.data + "/" + segments[0], toPath: sandbox.data + "/" + renamed)
        let stats = try sandbox.run(["stats", "--json"])
        #expect(stats.status == 0, "\(stats)")
        #expect(try stats.decode(Stats.self).events == 40)
        #expect(stats.stderr.contains("warning: segment \(renamed)"), "\(stats)")
        #expect(stats.stderr.contains("rename it to \(segments[0])"), "\(stats)")
        let export = try sandbox.run(["export"])
        #expect(export.lines.count == 40)
        #expect(export.stderr.contains("warning: segment \(renamed)"), "\(export)")
        let verify = try sandbox.run(["verify"])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("segmentNameMismatch"), "\(verify)")
    }

    @Test func aCleanlyClosedLogThatLostItsLastSegmentIsRefusedByReaders() async throws {
        let sandbox = try Sandbox()
        try await Self.makeLog(sandbox)
        let segments = try sandbox.segments()
        try #require(segments.count >= 2)
        try FileManager.default.removeItem(atPath: sandbox.data + "/" + segments[segments.count - 1])
        for command in [["stats"], ["export"], ["query", "profile", "--user", "u1"]] {
            let result = try sandbox.run(command)
            #expect(result.status == 1, "\(command): \(result)")
            #expect(result.stderr.contains("was closed cleanly at position 40"), "\(command): \(result)")
        }
        let verify = try sandbox.run(["verify"])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("endsBeforeCleanClose"), "\(verify)")
    }
}
