import EventLog
import Foundation
import ParleyTestSupport
import Testing

@testable import Projections

#if canImport(Glibc)
    import Glibc
#endif

/// A child process registers users and erases them one at a time (`CrashWriter --erase`) and is SIGKILLed at a
/// random moment of the erasures, again and again on one directory (docs/ERASURE.md, "Crash safety"). Before any
/// writer reopens the log, no key is destroyed without its durable `UserErased`; once a writer has reopened it,
/// every erasure the child acknowledged holds, a user is erased in the state exactly when their key is destroyed,
/// and every other user's key still opens their profile.
@Suite(.onTestThreads, .timeLimit(.minutes(6))) struct ErasureCrashTests {
    static let rounds = 20
    static let usersPerRound = 6

    @Test func killedMidErasureEveryAcknowledgedErasureHoldsAndNoneIsHalfDone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-erase-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var random = SeededGenerator(seed: 0xE2A5_E0)
        var users: [UserID] = []
        var acknowledged = Set<UserID>()
        var erased = Set<UserID>()
        var intervals: [Duration] = []
        var finishedByOpen = 0
        var keyBytes: [UserID: [UInt8]] = [:]
        for round in 0..<Self.rounds {
            let seed = round + 1
            let roundUsers = (0..<Self.usersPerRound).map { UserID("e\(seed)-\($0)") }
            users += roundUsers
            // Killed somewhere in the erasure after the `afterErasures`-th one: a random part of one erasure's
            // time (as seen in earlier rounds) after that acknowledgement, or after `ready` for the first.
            let afterErasures = Int(random.next() % UInt64(Self.usersPerRound))
            let perErasure = intervals.isEmpty ? .milliseconds(5) : intervals.sorted()[intervals.count / 2]
            let delay = perErasure * (Double(random.next() % 1_000) / 1_000)
            let outcome = try await runErasingChild(
                directory: directory, seed: seed, users: Self.usersPerRound, killAfter: afterErasures, delay: delay)
            try #require(
                outcome.wasKilled,
                "round \(round): the child ended by itself (status \(outcome.status)): \(outcome.errorOutput)")
            try #require(outcome.isReady, "round \(round): the child never got to erasing: \(outcome.errorOutput)")
            intervals += outcome.intervals
            #expect(
                outcome.erased == Array(roundUsers.prefix(outcome.erased.count)),
                "round \(round): acknowledged out of order: \(outcome.erased)")
            acknowledged.formUnion(outcome.erased)

            // What the kill left, read without a writer (no recovery, no key destroyed): a destroyed key always has
            // its event, acknowledged by the log (a reader sees no further than that).
            let reader = try Engine(store: EventLog.openReadOnly(directory: directory))
            var keysLeft: [UserID: KeyLookup] = [:]
            for user in users {
                let key = try reader.store.keys.lookup(KeyOwner(user.rawValue))
                #expect(
                    key != .erased || reader.isErased(user),
                    "round \(round): \(user)'s key is destroyed, without a durable UserErased")
                keysLeft[user] = key
                if case .key(let bytes) = key { keyBytes[user] = bytes.withUnsafeBytes { Array($0) } }
            }
            try reader.close()

            // A writer opens it: it finishes an erasure cut between its event and its key.
            let engine = try Engine.open(directory: directory)
            let keyPath = directory + "/" + FileKeyStore.fileName
            let keyFile = [UInt8](FileManager.default.contents(atPath: keyPath) ?? Data())
            var newlyErased: [UserID] = []
            for user in users {
                let key = try engine.store.keys.lookup(KeyOwner(user.rawValue))
                let isErased = engine.isErased(user)
                if acknowledged.contains(user) {
                    #expect(isErased, "round \(round): \(user)'s acknowledged erasure is lost from the state")
                    #expect(key == .erased, "round \(round): \(user)'s acknowledged erasure left their key")
                }
                #expect(isErased == (key == .erased), "round \(round): \(user) half erased: \(isErased), \(key)")
                if isErased {
                    if erased.insert(user).inserted && !acknowledged.contains(user) { newlyErased.append(user) }
                    if case .key = keysLeft[user] { finishedByOpen += 1 }
                    if let bytes = keyBytes[user] {
                        #expect(!contains(keyFile, bytes), "round \(round): erased \(user)'s key is still in the file")
                    }
                } else {
                    #expect(!erased.contains(user), "round \(round): erased \(user) came back")
                    if case .key = key {} else { Issue.record("round \(round): \(user) lost their key: \(key)") }
                    #expect(
                        try engine.profile(user)?.name == "Erasure \(user.rawValue)",
                        "round \(round): \(user)'s profile no longer opens")
                }
            }
            // Only the erasure in flight at the kill may have completed unacknowledged: the next one in order.
            #expect(
                Set(newlyErased).isSubset(of: roundUsers.dropFirst(outcome.erased.count).prefix(1)),
                "round \(round): erased without acknowledgement: \(newlyErased)")
            #expect(try engine.destroyErasedKeys() == 0, "round \(round): the open left an erased user's key")
            #expect(try engine.store.verify().isOK, "round \(round)")
            #expect(try engine.replayDigest() == engine.stateDigest, "round \(round): state and replay differ")
            try engine.close()
        }
        #expect(acknowledged.count >= Self.rounds, "the children acknowledged too few erasures to mean much")
        #expect(finishedByOpen > 0, "no kill landed between an erasure's event and its key")
        print(
            "ErasureCrashTests: \(acknowledged.count) erasures acknowledged, \(erased.count - acknowledged.count) "
                + "completed unacknowledged, \(finishedByOpen) finished by the next open")
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}

/// What one `CrashWriter --erase` child did before it was killed.
private struct ErasingChildOutcome: Sendable {
    /// The users whose `erased` line the child printed whole, in order.
    var erased: [UserID] = []
    /// Whether it printed `ready` (its users registered).
    var isReady = false
    /// The time between consecutive lines after `ready`, as the parent read them.
    var intervals: [Duration] = []
    var wasKilled = false
    var status: Int32 = 0
    var errorOutput = ""
}

/// Runs `CrashWriter --erase` on `directory` and SIGKILLs it `delay` after it acknowledged `killAfter` erasures
/// (`ready` when 0), or at once when it prints `done`. Lines already in the pipe when it dies are acknowledged too.
private func runErasingChild(directory: String, seed: Int, users: Int, killAfter: Int, delay: Duration)
    async throws -> ErasingChildOutcome
{
    let executable = try crashWriterExecutable()
    let arguments = ["--erase", "--data", directory, "--seed", String(seed), "--users", String(users)]
    return try await onDedicatedThread("erasure-crash-child") {
        try runErasingChildBlocking(executable, arguments: arguments, killAfter: killAfter, delay: delay)
    }
}

private func runErasingChildBlocking(_ executable: URL, arguments: [String], killAfter: Int, delay: Duration) throws
    -> ErasingChildOutcome
{
    let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID()).stderr").path
    _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: errorPath) }
    let process = SpawnedProcess()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle(forWritingAtPath: errorPath)
    try process.run()

    var killed = false
    func killChild() {
        if !killed { kill(process.processIdentifier, SIGKILL) }
        killed = true
    }
    var outcome = ErasingChildOutcome()
    let clock = ContinuousClock()
    var lastLine = clock.now
    let descriptor = output.fileHandleForReading.fileDescriptor
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 12)
    while true {
        // A guard against a child that hangs, not a bound on how fast it erases.
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, 120_000)
        if ready < 0 && errno == EINTR { continue }
        if ready == 0 {
            Issue.record("the erasing child printed nothing for 2 minutes: killed")
            killChild()
        }
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        pending.append(contentsOf: chunk[0..<count])
        var lineStart = 0
        for index in pending.indices where pending[index] == UInt8(ascii: "\n") {
            let line = String(decoding: pending[lineStart..<index], as: UTF8.self)
            lineStart = index + 1
            let now = clock.now
            if outcome.isReady && !killed { outcome.intervals.append(now - lastLine) }
            lastLine = now
            if line == "ready" {
                outcome.isReady = true
            } else if line.hasPrefix("erased ") {
                outcome.erased.append(UserID(String(line.dropFirst("erased ".count))))
            } else if line == "done" {
                killChild()
            } else {
                Issue.record("the erasing child printed a malformed line: \(line)")
            }
        }
        pending.removeFirst(lineStart)
        if !killed && outcome.isReady && outcome.erased.count >= killAfter {
            // The random moment within the next erasure; the child goes on meanwhile, its lines wait in the pipe.
            let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            Thread.sleep(forTimeInterval: seconds)
            killChild()
        }
    }
    // End of output: the child is dead. A partial last line, cut by the kill, is not counted.
    process.waitUntilExit()
    outcome.errorOutput = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    outcome.wasKilled = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
    outcome.status = process.terminationStatus
    return outcome
}
