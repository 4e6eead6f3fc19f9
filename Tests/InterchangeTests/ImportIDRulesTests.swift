import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Interchange
@testable import Projections

/// An export whose ids the engine refuses says which record holds the id and which rule it breaks.
@Suite(.onTestThreads) struct ImportIDRulesTests {
    @Test func anIDOutsideTheRulesIsAProblemAtItsPath() async throws {
        let accented = "uidAd\u{E1}"
        let export = ImportShapesTests.wagChatAdminSDK.replacingOccurrences(of: "uidAda", with: accented)
        try await withEngine { engine, _ in
            let plan = ImportPlan.read(Data(export.utf8), format: .firestoreJSON)
            let problems = try plan.problems(against: engine).filter { $0.code == "invalidID" }
            #expect(problems.first?.path == "users/\(accented)", "\(problems)")
            #expect(problems.first?.message.contains("'\(accented)'") == true, "\(problems)")
            #expect(problems.first?.message.contains("ASCII letters, digits") == true, "\(problems)")
        }
    }

    @Test func theAppsIDsPassTheRules() async throws {
        try await withEngine { engine, _ in
            let plan = ImportPlan.read(Data(ImportShapesTests.wagChatAdminSDK.utf8), format: .firestoreJSON)
            let problems = try plan.problems(against: engine)
            #expect(problems.isEmpty, "\(problems)")
        }
    }
}
