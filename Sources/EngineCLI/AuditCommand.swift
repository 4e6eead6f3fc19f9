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
    // Unconditional: `--limit -1` is a value to refuse as not positive, not a missing value and a `-1` option.
    @Option(parsing: .unconditional, help: "At most this many events (a positive number); says so when there are more.")
    var limit: Int = 1000
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
            // One more than asked, to know whether the answer was cut.
            entries = try engine.audit(
                actor: actor, type: type, stream: stream, since: from, until: to,
                limit: limit == .max ? limit : limit + 1)
        } catch {
            throw CLIError(error)
        }
        let isCut = entries.count > limit
        defer {
            if isCut {
                Output.error(
                    "stopped at --limit \(limit): more events match; raise --limit or narrow with --since, --until, "
                        + "--actor, --type or --stream (the next one is at position \(entries[limit].position.rawValue))"
                )
            }
        }
        let shown = isCut ? Array(entries.prefix(limit)) : entries
        if json {
            Output.write(
                lines: shown.map { entry in
                    entry.event?.jsonLine()
                        ?? "{\"position\":\(entry.position.rawValue),\"time\":"
                        + JSONText.quote(Output.time(entry.time))
                        + ",\"actor\":" + JSONText.quote(entry.actor) + ",\"type\":" + JSONText.quote(entry.type)
                        + ",\"stream\":" + JSONText.quote(entry.stream) + "}"
                })
        } else {
            Output.table(
                ["position", "time", "actor", "type", "stream", "data"],
                shown.map {
                    [
                        String($0.position.rawValue), Output.time($0.time), $0.actor, $0.type, $0.stream,
                        Output.cell($0.event?.dataJSON() ?? "(this build cannot decode it)", width: 70),
                    ]
                })
        }
    }
}
