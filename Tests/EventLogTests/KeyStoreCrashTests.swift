import Foundation
import ParleyTestSupport
import Testing

@testable import EventLog

/// A child process makes and destroys data keys (`CrashWriter --keys`) and is SIGKILLed at a random moment, again
/// and again on the same store: every key it acknowledged is there, every destroy it acknowledged is complete, and
/// the one destroy a kill may cut short leaves its owner either intact or erased — never a key half gone.
@Suite(.onTestThreads, .timeLimit(.minutes(6))) struct KeyStoreCrashTests {
    static let rounds = 12

    @Test func killedAtAnyMomentTheStoreKeepsEveryKeyOrErasesItWhole() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var random = SeededGenerator(seed: 0xC0FFEE)
        var made: [Int: UInt64] = [:]
        var destroyed = Set<Int>()
        var erasedUnacknowledged = Set<Int>()
        for round in 0..<Self.rounds {
            let killAfter = random.next() % 6 == 0 ? 0 : 1 + Int(random.next() % 40)
            let outcome = try await runCrashWriter(arguments: ["--data", directory, "--keys"], killAfter: killAfter)
            try #require(
                outcome.wasKilled,
                "round \(round): the child ended by itself (status \(outcome.status)): \(outcome.errorOutput)")
            for (number, line) in outcome.acknowledged {
                if line.high == 0xC { made[Int(number)] = line.low } else { destroyed.insert(Int(number)) }
            }
            let store = try FileKeyStore.open(directory: directory)
            let file = try fileBytes(directory + "/" + FileKeyStore.fileName)
            var newlyErased: [Int] = []
            for (number, prefix) in made {
                let owner = KeyOwner("k\(number)")
                switch try store.lookup(owner) {
                case .key(let key):
                    #expect(!destroyed.contains(number), "round \(round): k\(number)'s acknowledged destroy is lost")
                    #expect(!erasedUnacknowledged.contains(number), "round \(round): erased k\(number) came back")
                    let found = key.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self) }
                    #expect(found == prefix, "round \(round): k\(number) has another key than it was given")
                case .erased:
                    if !destroyed.contains(number), erasedUnacknowledged.insert(number).inserted {
                        newlyErased.append(number)
                    }
                    let bytes = withUnsafeBytes(of: prefix) { Array($0) }
                    #expect(!contains(file, bytes), "round \(round): erased k\(number)'s key is still in the file")
                case .absent:
                    Issue.record("round \(round): k\(number)'s acknowledged key is lost")
                }
            }
            // Only the destroy in flight when the child was killed may have completed unacknowledged, and only
            // an even-numbered user is ever destroyed.
            #expect(newlyErased.count <= 1, "round \(round): \(newlyErased)")
            #expect(newlyErased.allSatisfy { $0 % 2 == 0 })
            try store.close()
        }
        #expect(made.count > 20, "the children made too few keys to test anything")
        #expect(destroyed.count > 5)
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
