import ArgumentParser
import CrashRecipe
import EventLog
import Foundation
import Projections
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The crash tests' writer (a test-only executable): appends records in `.synced` mode forever and prints each
/// acknowledged position on stdout, so a test can SIGKILL it at any moment and check what survived.
///
/// Every record is derived from its id (``CrashRecipe``, shared with the tests), so a test can check a
/// survivor's bytes from the `position id` line alone. Producer 0 appends 600 records of 200 B per call (more than one batch: a
/// multi-batch group); the others append 1–8 records of 0 B – 8 KiB, so group commit mixes them.
///
/// With `--commands` it drives the engine instead: concurrent senders run validated commands (messages into
/// their rooms, first direct messages that create rooms, read markers) and it prints `position id` for every
/// event of each acknowledged command. With `--keys` it makes and destroys data keys (`runKeys`); with `--erase` it
/// registers users and erases them through the engine (`runErase`).
@main
struct CrashWriter: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "CrashWriter", abstract: "Test helper: append until killed.")
    @Option(help: "The data directory.") var data: String
    @Option(help: "Seed: the high half of every event id, and the producers' choice of append sizes.")
    var seed: UInt64 = 1
    @Option(help: "Segment size in bytes.") var segmentSize: Int = 128 << 20
    @Option(help: "Concurrent producers.") var producers: Int = 4
    @Flag(help: "Run validated commands through the engine instead of raw appends.") var commands = false
    @Flag(help: "Make and destroy data keys in a key store instead (see runKeys).") var keys = false
    @Flag(help: "Register users, then erase them through the engine, instead (see runErase).") var erase = false
    @Option(help: "With --erase: how many users to register and erase.") var users: Int = 6

    func run() async throws {
        if keys {
            try runKeys()
            return
        }
        if erase {
            try await runErase()
            return
        }
        if commands {
            try await runCommands()
            return
        }
        // blocking-ok: a process of its own that only writes: nothing else waits for its threads
        let log = try EventLog.open(
            directory: data, configuration: .init(segmentSize: segmentSize, durability: .synced))
        let printer = AcknowledgementPrinter()
        let seed = self.seed
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<max(1, producers) {
                group.addTask {
                    try await Self.produce(log: log, producer: UInt64(producer), seed: seed, printer: printer)
                }
            }
            try await group.waitForAll()
        }
    }

    /// Appends until killed; prints `position id` for every record once its append call returned.
    private static func produce(log: EventLog, producer: UInt64, seed: UInt64, printer: AcknowledgementPrinter)
        async throws
    {
        var random = SeededGenerator(seed: seed ^ (producer &+ 1) &* 0x9E37_79B9_7F4A_7C15)
        var sequence: UInt64 = 0
        while true {
            let count = producer == 0 ? 600 : Int(random.next() % 8) + 1
            var records: [ProposedRecord] = []
            records.reserveCapacity(count)
            for _ in 0..<count {
                records.append(CrashRecipe.proposed(id: EventID(high: seed, low: producer << 48 | sequence)))
                sequence += 1
            }
            let result = try await log.append(records)
            var text = ""
            for (position, record) in zip(result.positions, records) {
                text += "\(position.rawValue) \(record.id)\n"
            }
            printer.print(text)
        }
    }
}

extension CrashWriter {

    /// The engine mode: makes the world if it is missing (a child may start on a log an earlier one left),
    /// then sends from every producer until killed.
    private func runCommands() async throws {
        // blocking-ok: a process of its own that only writes: nothing else waits for its threads
        let engine = try Engine.open(directory: data, configuration: .init(segmentSize: segmentSize))
        for number in 0..<CrashRecipe.commandUsers where try engine.profile(Self.user(number)) == nil {
            try await engine.register(Self.user(number), method: .google, name: "Crash \(number)")
        }
        let producers = max(1, self.producers)
        for producer in 0..<producers where try engine.room(Self.room(producer)) == nil {
            try await engine.createGroup(
                Self.room(producer), by: Self.user(producer), name: "Crash room \(producer)",
                members: [Self.user(producer + 1), Self.user(producer + 2)])
        }
        let printer = AcknowledgementPrinter()
        let seed = self.seed
        try await withThrowingTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    try await Self.send(engine: engine, producer: producer, seed: seed, printer: printer)
                }
            }
            try await group.waitForAll()
        }
    }

    static func user(_ number: Int) -> UserID { UserID(CrashRecipe.user(number)) }
    static func room(_ producer: Int) -> RoomID { RoomID(CrashRecipe.room(producer)) }

    private static func send(engine: Engine, producer: Int, seed: UInt64, printer: AcknowledgementPrinter)
        async throws
    {
        let sender = user(producer)
        var step = 0
        while true {
            step += 1
            var positions: [Position]
            if step % 10 == 0 {
                positions = [try await engine.markRead(room(producer), user: sender)]
            } else if step % 7 == 0 {
                let partner = user(producer + 3 + step / 7)
                guard partner != sender else { continue }
                let sent = try await engine.sendMessage(
                    from: sender, to: partner, body: "direct \(step)",
                    message: MessageID("d\(seed)-\(producer)-\(step)"))
                positions = sent.createdRoom ? [Position(sent.position.rawValue - 1), sent.position] : [sent.position]
            } else {
                let sent = try await engine.sendMessage(
                    in: room(producer), from: sender, body: "message \(step)",
                    message: MessageID("m\(seed)-\(producer)-\(step)"))
                positions = [sent.position]
            }
            let records = try engine.store.records(at: positions)
            printer.print(records.map { "\($0.position.rawValue) \($0.id)\n" }.joined())
        }
    }
}

/// Writes acknowledgement lines to stdout unbuffered, one call's lines at a time, so a SIGKILL loses at
/// most the line being written.
private final class AcknowledgementPrinter: Sendable {
    private let lock = Mutex(())

    func print(_ text: String) {
        lock.withLock { _ in
            let bytes = Array(text.utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { raw in Glibc.write(1, raw.baseAddress! + done, raw.count - done) }
                if n < 0 && errno == EINTR { continue }
                // The reading test is gone: there is nobody left to acknowledge to.
                if n <= 0 { exit(1) }
                done += n
            }
        }
    }
}
