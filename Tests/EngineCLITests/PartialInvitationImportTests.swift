import Foundation
import ParleyTestSupport
import Testing

/// `parley import --skip-invalid` keeps the valid guests of an invitation and reports the one it left out.
@Suite("Partial invitations", .onTestThreads)
struct PartialInvitationImportTests {
    static let lines = [
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e01","type":"UserRegistered","data":{"user":"ann","method":"google","name":"Ann"}}"#,
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e02","type":"UserRegistered","data":{"user":"dan","method":"google","name":"Dan"}}"#,
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e03","type":"FriendRequested","data":{"from":"ann","to":"dan"}}"#,
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e04","type":"FriendRequestAccepted","data":{"from":"ann","to":"dan"}}"#,
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e05","type":"ActivityHosted","data":{"activity":"a1","host":"ann","kind":"party","title":"Party","#
            + #""startsAt":"2026-12-01T18:00:00.000Z","room":"a1-chat"}}"#,
        #"{"id":"5f0c6d1e-8a2b-4c3d-9e4f-0a1b2c3d4e5f","type":"GuestsInvited","data":{"activity":"a1","#
            + #""guests":["dan","cal"]}}"#,
    ]

    @Test func anInvitationKeepsItsValidGuestsAndReportsTheOneLeftOut() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.file("zimmr.jsonl", Self.lines.joined(separator: "\n") + "\n")
        let refused = try sandbox.run("import", file)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("line 6: userNotFound: user cal does not exist"))

        let summary: ImportSummary = try sandbox.ok("import", file, "--skip-invalid", "--json").decode()
        #expect(summary.appended == 6)
        #expect(summary.invalid == 1)
        #expect(
            summary.problems == [
                ImportSummary.Problem(
                    location: "line 6", line: 6, path: nil, code: "userNotFound",
                    message: "user cal does not exist; left out of the invitation, which was kept for its other guests")
            ])
        let activity = try #require(
            try sandbox.ok("query", "activity", "--activity", "a1", "--json").json() as? [String: Any])
        let guests = try #require(activity["guests"] as? [[String: Any]])
        #expect(guests.compactMap { $0["user"] as? String } == ["dan"])

        let again: ImportSummary = try sandbox.ok("import", file, "--json").decode()
        #expect(again.appended == 0)
        #expect(again.duplicates == 6)
    }
}
