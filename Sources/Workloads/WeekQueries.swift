import EventLog
import Foundation
import Projections

/// The keys the benchmarks query a simulated week with (`parley bench` and the peer comparison in `Benchmarks/`
/// draw the same sequence from the same seed, so they ask for the same rooms and users).
public enum WeekQueries {
    /// The generator a sequence of query keys starts from.
    public static func generator(seed: UInt64) -> SeededGenerator { SeededGenerator(seed: seed ^ 0xA11CE) }

    /// A random user of a week simulated for `users` users.
    public static func user(users: Int, using random: inout SeededGenerator) -> UserID {
        UserID(String(format: "u%05d", Int.random(in: 1...users, using: &random)))
    }

    /// A random room of a random user (of the first of 20 drawn who has one), or nil.
    public static func room(in engine: Engine, users: Int, using random: inout SeededGenerator) -> RoomID? {
        for _ in 0..<20 {
            let rooms = (try? engine.rooms(user(users: users, using: &random))) ?? []
            if !rooms.isEmpty { return random.pick(rooms).room }
        }
        return nil
    }
}
