import ArgumentParser
import Projections

struct QueryActivityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "activity", abstract: "An activity with its guests, their answers and the counts.")
    @OptionGroup var options: QueryOptions
    @Option(help: "The activity.") var activity: String

    func run() throws {
        let view = try options.withEngine { engine in
            guard let view = try engine.activity(ActivityID(activity)) else {
                throw CLIError(
                    "unknown activity '\(activity)': no ActivityHosted event introduced it (see a user's "
                        + "activities with `parley query feed --user U`)")
            }
            return view
        }
        try options.print(view) {
            let counts = view.counts
            Output.fields([
                ("activity", view.activity.rawValue), ("host", view.host.rawValue), ("kind", view.kind.rawValue),
                ("title", view.title), ("description", Output.cell(view.description)),
                ("starts", Output.time(view.startsAt)), ("ends", Output.time(view.endsAt)),
                ("place", view.place ?? "–"), ("cancelled", view.cancelled ? "yes" : "no"),
                ("room", view.room.rawValue),
                (
                    "guests",
                    "\(counts.invited) invited, \(counts.going) going, \(counts.maybe) maybe, \(counts.declined) declined"
                ),
            ])
            print("")
            Output.table(["guest", "state"], view.guests.map { [$0.user.rawValue, $0.state.rawValue] })
        }
    }
}
