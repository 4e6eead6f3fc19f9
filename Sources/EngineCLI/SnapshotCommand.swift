import ArgumentParser
import Foundation
import Projections

struct SnapshotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write a snapshot of all projection state, so the next open folds only the events after it.",
        discussion: "Keeps the newest two snapshot files in the data directory.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    struct Result: Encodable {
        var position: UInt64
        var file: String
        var bytes: Int
        var stateDigest: String
    }

    func run() throws {
        let engine = try global.openExistingEngine()
        defer { engine.closeSayingNotes() }
        let position: UInt64
        do {
            position = try engine.writeSnapshot().rawValue
        } catch {
            throw CLIError(error)
        }
        // The file is named by its position: snapshot-<20 digits>.bin.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: global.directory)) ?? []
        let name = names.first {
            $0.hasPrefix("snapshot-") && $0.hasSuffix(".bin") && UInt64($0.dropFirst(9).dropLast(4)) == position
        }
        let file = global.directory + "/" + (name ?? "snapshot-?.bin")
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: file))?[.size] as? Int) ?? 0
        let result = Result(position: position, file: file, bytes: bytes, stateDigest: try engine.stateDigest)
        if json {
            try Output.json(result)
        } else {
            Output.fields([
                ("position", String(position)), ("file", file), ("size", Output.bytes(bytes)),
                ("state digest", result.stateDigest),
            ])
        }
    }
}
