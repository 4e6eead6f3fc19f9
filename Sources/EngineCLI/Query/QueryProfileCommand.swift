import ArgumentParser
import Projections

struct QueryProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "profile", abstract: "A user's account and profile.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The user.") var user: String

    func run() throws {
        let profile = try options.withEngine { engine in try engine.profile(try engine.requireUser(user)) }
        guard let profile else { throw CLIError("unknown user '\(user)'") }
        try options.print(profile) { profile.printFields() }
    }
}

extension Profile {
    func printFields() {
        var location: String?
        if let place = self.location {
            location = [place.city, place.lat.map { "lat \($0)" }, place.lon.map { "lon \($0)" }]
                .compactMap { $0 }.joined(separator: ", ")
        }
        Output.fields([
            ("user", user.rawValue), ("signed up with", method.rawValue), ("phone", phone ?? "–"),
            ("email", email ?? "–"), ("name", name ?? "–"), ("nickname", nickname ?? "–"),
            ("photo", photoURL ?? "–"), ("about", Output.cell(about)), ("location", location ?? "–"),
            ("interests", interests.isEmpty ? "–" : interests.joined(separator: ", ")),
            ("dogs", dogs.isEmpty ? "–" : dogs.map(\.summary).joined(separator: "; ")),
            ("registered", Output.time(registeredAt)),
        ])
    }
}

extension Dog {
    /// "Rex (beagle, 3 y)".
    var summary: String {
        let details = [breed, ageYears.map { "\($0) y" }].compactMap { $0 }
        return details.isEmpty ? name : "\(name) (\(details.joined(separator: ", ")))"
    }
}
