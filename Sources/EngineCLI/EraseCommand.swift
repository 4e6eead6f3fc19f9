import ArgumentParser
import EventLog
import Foundation
import Projections

struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a user for good: their personal data can never be read again; the log still verifies.",
        discussion: """
            Appends UserErased (as `system`), waits until it is durable, then destroys the user's data key: their \
            profile, messages, gratitude, hosted activities and group names were sealed under it and stay in the \
            log as ciphertext no one can open. Friendships, requests, rooms and invitations end; their messages \
            read as deleted; the id can never be registered again. The head digest does not change for what was \
            written before. See docs/ERASURE.md for what erasure does not reach (copies others made, backups of the \
            key store).
            """)
    @OptionGroup var global: GlobalOptions
    @Option(help: "The user to erase.") var user: String
    @Flag(help: "Print JSON.") var json = false

    struct Result: Encodable {
        var user: String
        var position: UInt64
        var headDigest: String
    }

    func run() async throws {
        let directory = global.directory
        let engine = try await onDedicatedThread("parley-open") { () throws -> Engine in
            try global.openExistingEngine()
        }
        let position: Position
        do {
            position = try await engine.erase(UserID(user), actor: UserID.system.rawValue)
        } catch {
            await onDedicatedThread("parley-closing") { engine.closeSayingNotes() }
            throw CLIError("cannot erase \(user) in \(directory): \(error.code): \(error.message)")
        }
        let result = Result(user: user, position: position.rawValue, headDigest: engine.store.headDigest)
        await onDedicatedThread("parley-closing") { engine.closeSayingNotes() }
        if json {
            try Output.json(result)
        } else {
            Output.fields([
                ("erased", user), ("position", String(result.position)), ("head digest", result.headDigest),
            ])
        }
    }
}
