import Foundation

/// A small week in the apps as canonical JSON Lines: five users, friendships and requests, a group chat with an
/// edit and a read marker, a direct chat with an image and a deleted message, a walk with guests, and gratitude.
/// Event `n` (position `n` once imported) happens at 09:`n` on 2026-11-20.
enum Scenario {
    static func time(_ position: Int) -> String {
        "2026-11-20T09:" + (position < 10 ? "0" : "") + "\(position):00.000Z"
    }

    static let events: [(type: String, data: String)] = [
        ("UserRegistered", #"{"user":"u1","method":"phone","phone":"+14155550101","name":"Ada"}"#),  // 1
        ("UserRegistered", #"{"user":"u2","method":"email","email":"bo@example.com","name":"Bo"}"#),  // 2
        ("UserRegistered", #"{"user":"u3","method":"phone","phone":"+14155550103","name":"Cy"}"#),  // 3
        ("UserRegistered", #"{"user":"u4","method":"email","email":"di@example.com","name":"Di"}"#),  // 4
        ("UserRegistered", #"{"user":"u5","method":"email","email":"ed@example.com","name":"Ed"}"#),  // 5
        ("ProfileUpdated", #"{"user":"u1","interests":["hiking","dogs"],"location":{"city":"Lisbon"}}"#),  // 6
        ("ProfileUpdated", #"{"user":"u4","interests":["hiking"],"location":{"city":"Porto"}}"#),  // 7
        ("ProfileUpdated", #"{"user":"u5","location":{"city":"Lisbon"}}"#),  // 8
        ("FriendRequested", #"{"from":"u1","to":"u2"}"#),  // 9
        ("FriendRequestAccepted", #"{"from":"u1","to":"u2"}"#),  // 10
        ("FriendRequested", #"{"from":"u2","to":"u3"}"#),  // 11
        ("FriendRequestAccepted", #"{"from":"u2","to":"u3"}"#),  // 12
        ("FriendRequested", #"{"from":"u1","to":"u4"}"#),  // 13
        ("FriendRequested", #"{"from":"u5","to":"u1"}"#),  // 14
        // 15
        ("RoomCreated", #"{"room":"g1","kind":"group","by":"u1","members":["u1","u2","u3"],"name":"Trail crew"}"#),
        // 16
        ("MessageSent", #"{"room":"g1","message":"m1","sender":"u1","kind":"text","body":"Who is up for a walk?"}"#),
        ("MessageSent", #"{"room":"g1","message":"m2","sender":"u2","kind":"text","body":"Me!"}"#),  // 17
        ("MessageSent", #"{"room":"g1","message":"m3","sender":"u3","kind":"text","body":"Count me in"}"#),  // 18
        ("MessageEdited", #"{"room":"g1","message":"m2","body":"Me! With Rex"}"#),  // 19
        ("MessagesRead", #"{"room":"g1","user":"u2","upTo":"m3"}"#),  // 20
        ("RoomCreated", #"{"room":"d1","kind":"direct","by":"u1","members":["u1","u2"]}"#),  // 21
        (
            "MessageSent",
            #"{"room":"d1","message":"m4","sender":"u1","kind":"image","media":{"url":"https://img.example.com/rex.jpg"}}"#
        ),  // 22
        ("MessageSent", #"{"room":"d1","message":"m5","sender":"u2","kind":"text","body":"Cute!"}"#),  // 23
        ("MessageDeleted", #"{"room":"d1","message":"m5"}"#),  // 24
        (
            "ActivityHosted",
            #"{"activity":"a1","host":"u1","kind":"walk","title":"Morning walk","startsAt":"2026-11-21T08:00:00.000Z","endsAt":"2026-11-21T09:00:00.000Z","place":"Parque","room":"a1-chat"}"#
        ),  // 25
        ("GuestsInvited", #"{"activity":"a1","guests":["u2","u3"]}"#),  // 26
        ("RSVPGiven", #"{"activity":"a1","user":"u2","answer":"going"}"#),  // 27
        ("FeelingDefined", #"{"feeling":"joy","name":"Joy","emoji":"😊"}"#),  // 28
        ("FeelingDefined", #"{"feeling":"calm","name":"Calm","emoji":"🌿"}"#),  // 29
        (
            "GratitudeTagged",
            #"{"gratitude":"g-1","author":"u1","recipient":"u2","body":"Thanks for the walk","feeling":"joy"}"#
        ),  // 30
        (
            "GratitudeTagged",
            #"{"gratitude":"g-2","author":"u1","recipient":"u3","body":"Lovely chat","feeling":"calm"}"#
        ),  // 31
        (
            "GratitudeTagged",
            #"{"gratitude":"g-3","author":"u1","recipient":"u2","body":"Rex is great","feeling":"joy"}"#
        ),  // 32
    ]

    /// The scenario as JSON Lines (no ids: the import generates them).
    static var jsonl: String {
        events.enumerated().map { index, entry in event(entry.type, at: time(index + 1), entry.data) }
            .joined(separator: "\n") + "\n"
    }

    /// A sandbox with the scenario imported.
    static func sandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        let file = try sandbox.file("scenario.jsonl", jsonl)
        let result = try sandbox.run("import", file)
        guard result.status == 0 else { throw CLITestError("importing the scenario failed: \(result)") }
        return sandbox
    }
}
