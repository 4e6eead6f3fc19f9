import ArgumentParser
import EventLog
import Projections

struct AuditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Who did what, when: matching events in position order (from the audit index, not a log scan).",
        discussion: "Every given filter must match. --json prints the events as canonical JSON Lines.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "Only events by this actor (a user id, or `system`).") var actor: String?
    @Option(help: "Only events of this type (MessageSent, FriendRequested, ...).") var type: String?
    @Option(help: "Only events of this stream (user:u1, room:r1, activity:a1, feelings).") var stream: String?
    @Option(help: "Only events at or after this ISO 8601 time (2026-11-20T09:30:00.000Z).") var since: String?
    @Option(help: "Only events at or before this ISO 8601 time.") var until: String?
    @Option(help: "At most this many events (a positive number).") var limit: Int = 1000
    @Flag(help: "Print canonical JSON Lines instead of a table.") var json = false

    func validate() throws {
        guard limit > 0 else { throw ArgumentParser.ValidationError("--limit must be a positive number, not \(limit)") }
    }

    func run() throws {
        let from = try since.map { try Output.time($0, option: "--since") }
        let to = try until.map { try Output.time($0, option: "--until") }
        let engine = try global.openEngineForReading()
        defer { try? engine.close() }
        let entries: [AuditEntry]
        do {
            entries = try engine.audit(actor: actor, type: type, stream: stream, since: from, until: to, limit: limit)
        } catch {
            throw CLIError(error)
        }
        if json {
            Output.write(
                lines: entries.map { entry in
                    entry.event?.jsonLine()
                        ?? "{\"position\":\(entry.position.rawValue),\"time\":"
                        + JSONText.quote(Output.time(entry.time))
                        + ",\"actor\":" + JSONText.quote(entry.actor) + ",\"type\":" + JSONText.quote(entry.type)
                        + ",\"stream\":" + JSONText.quote(entry.stream) + "}"
                })
        } else {
            Output.table(
                ["position", "time", "actor", "type", "stream", "data"],
                entries.map {
                    [
                        String($0.position.rawValue), Output.time($0.time), $0.actor, $0.type, $0.stream,
                        Output.cell($0.event?.dataJSON() ?? "(this build cannot decode it)", width: 70),
                    ]
                })
        }
    }
}
