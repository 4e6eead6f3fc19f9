import Projections

/// The benchmarks' command world: what `parley bench` sends through the engine's commands and what the peer
/// comparison (`Benchmarks/`) sends through each peer's transaction-per-command path, from the same description.
///
/// Users `s0000`…; each sender owns a four-person group room `room<sender>` (with three other users). Sender
/// `n`'s `step`-th command is what a chat screen produces: mostly a message into its room, every tenth a read
/// marker, every twentieth a first direct message to someone new (a `RoomCreated` and a `MessageSent`).
public struct CommandMix: Sendable {
    /// One command of the mix.
    public enum Command: Sendable, Hashable {
        /// A text message into an existing room; the sender must be a member.
        case message(room: RoomID, sender: UserID, body: String)
        /// A read marker up to the room's newest message; the user must be a member.
        case markRead(room: RoomID, user: UserID)
        /// A direct message; the first one between the two creates their direct room.
        case directMessage(from: UserID, to: UserID, body: String)
    }

    /// The most senders a mix can have.
    public static let maximumSenders = 4096
    /// Users in the world: every sender, and at least 64, so that first direct messages find partners.
    public let users: Int
    /// Senders `0..<senders`, each owning one group room.
    public let senders: Int

    /// A world for `senders` concurrent senders (at most ``maximumSenders``).
    public init(senders: Int) {
        precondition(senders >= 1 && senders <= Self.maximumSenders, "1…\(Self.maximumSenders) senders")
        self.senders = senders
        users = max(senders, 64)
    }

    /// Ids made once, so that formatting them is never part of what is timed.
    private static let userIDs = (0..<maximumSenders).map { UserID("s" + String(10_000 + $0).dropFirst()) }
    private static let roomIDs = (0..<maximumSenders).map { RoomID("room" + String(10_000 + $0).dropFirst()) }
    private static let bodies = (0..<16).map {
        "message \($0): see you at the park at six, bring the ball and some water"
    }

    /// User number `number`.
    public func user(_ number: Int) -> UserID { Self.userIDs[number] }

    /// Sender `sender`'s group room.
    public func room(_ sender: Int) -> RoomID { Self.roomIDs[sender] }

    /// The three members sender `sender` adds to its room (it is the fourth).
    public func invited(_ sender: Int) -> [UserID] { (1...3).map { user((sender + $0 * 37) % users) } }

    /// Sender `sender`'s `step`-th command.
    public func command(sender: Int, step: Int) -> Command {
        if step % 10 == 9 { return .markRead(room: room(sender), user: user(sender)) }
        if step % 20 == 3 {
            let partner = user((sender + 1 + (step / 20) % (users - 1)) % users)
            return .directMessage(from: user(sender), to: partner, body: Self.bodies[step % 16])
        }
        return .message(room: room(sender), sender: user(sender), body: Self.bodies[step % 16])
    }
}
