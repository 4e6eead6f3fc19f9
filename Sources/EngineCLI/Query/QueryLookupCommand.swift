import ArgumentParser
import Projections

struct QueryLookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup", abstract: "Find a user by phone number (E.164) or email; prints their profile.")
    @OptionGroup var options: QueryOptions
    @Option(help: "A phone number in E.164 form (+14155550123).") var phone: String?
    @Option(help: "An email address (case-insensitive).") var email: String?

    func validate() throws {
        guard (phone == nil) != (email == nil) else {
            throw ArgumentParser.ValidationError("pass exactly one of --phone P or --email E")
        }
    }

    func run() throws {
        let profile = try options.withEngine { engine -> Profile in
            let found = try phone.flatMap { try engine.user(phone: $0) } ?? email.flatMap { try engine.user(email: $0) }
            guard let found, let profile = try engine.profile(found) else {
                if let phone {
                    throw CLIError("no user signed up with phone \(phone) (phones are E.164: +14155550123)")
                }
                throw CLIError("no user signed up with email \(email ?? "")")
            }
            return profile
        }
        try options.print(profile) { profile.printFields() }
    }
}
