import Crypto
import Foundation
import ParleyAPI
import Projections
import Testing

@testable import Server

/// The generated code is the contract's: made from the openapi.yaml in the tree, and its enums hold every case
/// the engine has.
@Suite(.onTestThreads) struct ContractTests {
    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every generated file names the digest of the openapi.yaml it was made from: a contract changed without
    /// running Sources/ParleyAPI/generate.sh is found here.
    @Test func theGeneratedCodeWasMadeFromTheContractInTheTree() throws {
        let contract = try Data(contentsOf: Self.root.appendingPathComponent("Sources/ParleyAPI/openapi.yaml"))
        let digest = SHA256.hash(data: contract).map { String(format: "%02x", $0) }.joined()
        var files = 0
        for folder in ["Sources/ParleyAPI/Generated", "Sources/Server/Generated", "Sources/ParleyKit/Generated"] {
            let directory = Self.root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                #expect(
                    text.prefix(300).contains("// openapi.yaml sha256 \(digest)"),
                    "\(folder)/\(name) was not generated from this openapi.yaml: run Sources/ParleyAPI/generate.sh")
                files += 1
            }
        }
        #expect(files >= 4)
    }

    /// An engine value the contract's enum does not have would be answered 500: each has all of them.
    @Test func theContractsEnumsHoldEveryCaseOfTheEngines() throws {
        for value in RegistrationMethod.allCases {
            _ = try mapped(value, as: Schemas.SignUpBody.MethodPayload.self)
            _ = try mapped(value, as: Schemas.Profile.MethodPayload.self)
        }
        for value in RoomKind.allCases {
            _ = try mapped(value, as: Schemas.RoomSummary.KindPayload.self)
            _ = try mapped(value, as: Schemas.RoomDetails.KindPayload.self)
        }
        for value in MessageKind.allCases {
            _ = try mapped(value, as: Schemas.MessageView.KindPayload.self)
            _ = try mapped(value, as: Schemas.MessageBody.KindPayload.self)
        }
        for value in ActivityKind.allCases {
            _ = try mapped(value, as: Schemas.Activity.KindPayload.self)
            _ = try mapped(value, as: Schemas.FeedItem.KindPayload.self)
            _ = try mapped(value, as: Schemas.ActivityBody.KindPayload.self)
        }
        for value in RSVPAnswer.allCases {
            _ = try mapped(value, as: Schemas.FeedItem.RsvpPayload.self)
            _ = try mapped(value, as: Schemas.RSVPBody.AnswerPayload.self)
        }
        for value in GuestState.allCases { _ = try mapped(value, as: Schemas.GuestView.StatePayload.self) }
        for value in ReportAction.allCases {
            _ = try mapped(value, as: Schemas.ResolutionBody.ActionPayload.self)
            _ = try mapped(value, as: Schemas.ReportView.StatePayload.self)
        }
        for value in PushPlatform.allCases { _ = try mapped(value, as: Schemas.DeviceBody.PlatformPayload.self) }
        for field in ProfileField.allCases { #expect(ProfilePatch.Field(rawValue: field.rawValue) != nil) }
    }

    /// Times keep their millisecond through the contract's transcoder, whichever way round.
    @Test func timesKeepTheirMillisecond() throws {
        let times = MillisecondTimes()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10_000 {
            let milliseconds = Int64.random(in: 0...4_102_444_800_000, using: &generator)
            let text = try times.encode(Date(milliseconds: milliseconds))
            #expect(text == Timestamp.format(milliseconds))
            #expect(try times.decode(text).milliseconds == milliseconds)
        }
        #expect(throws: DecodingError.self) { try times.decode("yesterday") }
    }
}
