import ArgumentParser
import EventLog
import Foundation
import Projections
import Workloads

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Simulate a week of the five apps into a fresh log, replay it, and show what it holds.",
        discussion: """
            Writes to a new temporary directory (or --data DIR, which must be empty or absent) and leaves it there, \
            so you can run queries on it afterwards.
            """)
    @Option(help: "The data directory (default: a new temporary directory).") var data: String?
    @Option(help: "Number of users.") var users: Int = 20_000
    @Option(help: "Number of simulated days.") var days: Int = 7
    @Option(help: "Random seed.") var seed: UInt64 = 42

    func run() throws {
        let directory = try data ?? makeTemporaryDirectory()
        try requireEmptyLog(directory)
        print("Parley demo: a week of WagChat, LikeMinds, ChatApp, Ripple and Zimmr, \(users) users")
        print("data directory: \(directory)\n")

        var engine = try Engine.open(directory: directory)
        let simulated = try runSimulation(engine: engine, users: users, days: days, seed: seed)
        print(
            "1. simulate  \(simulated.events) events validated and appended durably in "
                + String(
                    format: "%.2f s  → %@ events/s", simulated.seconds, ProgressBar.count(simulated.eventsPerSecond)))

        let replayStart = ContinuousClock.now
        let replayed = try engine.replay()
        let replaySeconds = seconds(since: replayStart)
        print(
            "2. replay    \(replayed) events folded into every projection in "
                + String(
                    format: "%.2f s  → %@ events/s", replaySeconds, ProgressBar.count(Double(replayed) / replaySeconds))
        )
        let liveDigest = try engine.stateDigest

        let snapshotStart = ContinuousClock.now
        let snapshotPosition = try engine.writeSnapshot()
        let snapshotSeconds = seconds(since: snapshotStart)
        try engine.close()
        let reopenStart = ContinuousClock.now
        engine = try Engine.open(directory: directory)
        let reopenSeconds = seconds(since: reopenStart)
        defer { try? engine.close() }
        let sameState = try engine.stateDigest == liveDigest
        print(
            "3. snapshot  at position \(snapshotPosition) in " + String(format: "%.2f s", snapshotSeconds)
                + "; reopen from it in " + String(format: "%.3f s", reopenSeconds)
                + (sameState ? " (same state digest as the replay)" : "  ✗ STATE DIFFERS"))
        let verification = try engine.store.verify()
        print(
            "4. verify    "
                + (verification.isOK ? "every batch checks out" : "✗ \(verification.problems.count) problems"))

        let stats = StatsOutput(engine.store.stats())
        print("\n── What the log holds ──")
        print(
            "events \(stats.events) in \(stats.segments) segment(s): \(Output.bytes(stats.bytesOnDisk)) on disk, "
                + "\(Output.bytes(stats.uncompressedBytes)) encoded (" + String(format: "%.2f×", stats.compressionRatio)
                + " LZ4), " + String(format: "%.1f", Double(stats.bytesOnDisk) / Double(max(stats.events, 1)))
                + " bytes/event")
        print("head digest \(stats.headDigest)\n")
        Output.table(
            ["event type", "count"],
            stats.byType.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { [$0.key, String($0.value)] })

        let busiest = try showSamples(engine)
        let erasureHolds = try showErasure(engine, room: busiest, head: stats.events, digest: stats.headDigest)
        guard sameState, verification.isOK, erasureHolds else {
            throw CLIError("the demo found an inconsistency (see above)")
        }
        print("\nExplore it:  parley --data \(directory) query rooms --user u00001   (see `parley --help`)")
    }

    /// Erases the sender of the newest message of `room`, then shows that the head digest printed before still
    /// holds at its position, the log verifies, and the messages read as deleted. Returns whether all that holds.
    private func showErasure(_ engine: Engine, room: RoomID?, head: UInt64, digest: String) throws -> Bool {
        guard let room, let last = try engine.messages(room, limit: 1).messages.last else { return true }
        let user = last.sender
        print("\n── Erasing a user ──")
        print("before: \(last.id.rawValue) by \(user): \"\((last.body ?? last.media?.url ?? "").prefix(50))\"")
        let position = try engine.eraseAndWait(user, actor: UserID.system.rawValue)
        let after = try engine.messages(room, limit: 1).messages.last
        let log = engine.store as? EventLog
        let unchanged = try log?.chainDigest(through: Position(head)) == digest
        let verified = try engine.store.verify().isOK
        let deleted = after?.id == last.id && after?.deleted == true && after?.body == nil
        print(
            "5. erase     \(user) (UserErased at position \(position.rawValue)), data key destroyed; their profile is "
                + (try engine.profile(user) == nil ? "gone" : "✗ STILL THERE"))
        print("   after:  \(last.id.rawValue) by \(user): " + (deleted ? "deleted, no body" : "✗ STILL READABLE"))
        print(
            "   head digest at position \(head): " + (unchanged ? "\(digest) (unchanged)" : "✗ CHANGED")
                + "; verify: " + (verified ? "every batch checks out" : "✗ FAILS"))
        return unchanged && verified && deleted
    }

    /// Prints sample answers; returns the room it showed messages of.
    private func showSamples(_ engine: Engine) throws -> RoomID? {
        var shown: RoomID?
        let candidates = (1...min(users, 400)).map { UserID(String(format: "u%05d", $0)) }
        print("\n── Sample answers ──")
        if let user = try candidates.max(by: { try engine.rooms($0).count < engine.rooms($1).count }) {
            let rooms = try engine.rooms(user)
            let name = try engine.profile(user)?.name ?? user.rawValue
            print(
                "\nrooms(\(user)) — \(name)'s chat list, newest first (\(rooms.count) rooms, "
                    + "\(rooms.reduce(0) { $0 + $1.unread }) unread):")
            Output.table(
                ["room", "kind", "title", "unread", "last message"],
                rooms.prefix(6).map { room in
                    [
                        room.room.rawValue, room.kind.rawValue, room.title, String(room.unread),
                        room.lastMessage.map { "\($0.sender): \($0.preview.prefix(40))" } ?? "—",
                    ]
                })
            if let busiest = rooms.first {
                shown = busiest.room
                let page = try engine.messages(busiest.room, limit: 5)
                print("\nmessages(\(busiest.room), limit: 5) — oldest first:")
                Output.table(
                    ["time", "sender", "kind", "body"],
                    page.messages.map { message in
                        [
                            Timestamp.format(message.time), message.sender.rawValue, message.kind.rawValue,
                            message.deleted
                                ? "(deleted)"
                                : String((message.body ?? message.media?.url ?? "").prefix(50))
                                    + (message.edited ? " (edited)" : ""),
                        ]
                    })
            }
        }
        if let viewer = try candidates.first(where: { try !engine.connections($0).isEmpty }),
            let connection = try engine.connections(viewer).first
        {
            let relation = try engine.relationship(viewer, connection.user)
            print("\nrelationship(\(viewer), \(connection.user)): \(relation.kind.rawValue) — \"\(relation.label)\"")
        }
        if let guest = try candidates.first(where: { try engine.feed($0).contains { $0.role == .guest } }) {
            print("\nfeed(\(guest)) — invitations, soonest first:")
            Output.table(
                ["starts", "activity", "title", "role", "rsvp"],
                try engine.feed(guest).prefix(5).map {
                    [
                        Timestamp.format($0.startsAt), $0.activity.rawValue, $0.title, $0.role.rawValue,
                        $0.rsvp?.rawValue ?? "—",
                    ]
                })
        }
        if let author = try candidates.first(where: { try engine.gratitude($0).total > 1 }) {
            let summary = try engine.gratitude(author)
            let feelings = summary.byFeeling.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                separator: ", ")
            print("\ngratitude(\(author)): \(summary.total) tagged — \(feelings)")
            if let newest = summary.history.first {
                print("  newest: to \(newest.recipient), \(newest.feeling): \"\(newest.body)\"")
            }
        }
        return shown
    }

    private func makeTemporaryDirectory() throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let path = base + "/parley-demo-" + String(UUID().uuidString.prefix(8)).lowercased()
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
