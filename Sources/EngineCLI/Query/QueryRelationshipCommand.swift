import ArgumentParser
import Projections

struct QueryRelationshipCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relationship",
        abstract: "How one user relates to another, with the label the apps show (\"Friend\", \"3 mutual friends\").")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user looking.") var viewer: String
    @Option(help: "The user looked at.") var user: String

    func run() throws {
        let relationship = try options.withEngine { engine in
            try engine.relationship(try engine.requireUser(viewer), try engine.requireUser(user))
        }
        try options.print(relationship) {
            Output.table(
                ["viewer", "user", "kind", "label", "mutual"],
                [[viewer, user, relationship.kind.rawValue, relationship.label, String(relationship.mutual)]])
        }
    }
}
