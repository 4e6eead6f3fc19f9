import EventLog
import Projections

extension CrashWriter {
    /// The erasure mode (`--erase`): opens an engine on the directory (which finishes any erasure an earlier child's
    /// kill cut short), registers users `e<seed>-0` … `e<seed>-<users - 1>` named `Erasure <id>` (those missing),
    /// prints `ready`, then erases them one at a time in that order with `eraseAndWait` (actor `system`), printing
    /// `erased <id>` once each returned: its `UserErased` durable and its key destroyed. Prints `done` after the last,
    /// then waits to be killed.
    func runErase() async throws {
        // blocking-ok: a process of its own: nothing else waits for its threads
        let engine = try Engine.open(directory: data)
        let users = (0..<max(1, self.users)).map { UserID("e\(seed)-\($0)") }
        for user in users where try !engine.isErased(user) && engine.profile(user) == nil {
            try await engine.register(user, method: .google, name: "Erasure \(user.rawValue)")
        }
        Self.printLine("ready\n")
        try await onDedicatedThread("crash.erase") { () throws(ValidationError) in
            for user in users where !engine.isErased(user) {
                try engine.eraseAndWait(user, actor: "system")
                Self.printLine("erased \(user.rawValue)\n")
            }
        }
        Self.printLine("done\n")
        while true { try await Task.sleep(for: .seconds(3_600)) }
    }
}
