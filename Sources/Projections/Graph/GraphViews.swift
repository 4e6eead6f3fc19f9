/// Pending friend requests of a user, oldest first.
public struct FriendRequests: Sendable, Hashable, Encodable {
    /// Requests received, oldest first.
    public var incoming: [UserID]
    /// Requests sent, oldest first.
    public var outgoing: [UserID]
}

/// A friend of a friend, with the number of friends in common.
public struct Connection: Sendable, Hashable, Encodable {
    /// The user.
    public var user: UserID
    /// Friends in common.
    public var mutual: Int
}

/// How a viewer relates to another user, in the first kind that applies.
public enum RelationshipKind: String, Sendable, Hashable, Encodable {
    case `self`, blocked, friend, requestSent, requestReceived, connection, none
}

/// A relationship with the label the apps show under a name ("Friend", "3 mutual friends", ...).
public struct Relationship: Sendable, Hashable, Encodable {
    /// The kind.
    public var kind: RelationshipKind
    /// The label the apps show.
    public var label: String
    /// Friends the two have in common.
    public var mutual: Int
}

/// A WagChat match: someone who shares interests, a city, or friends.
public struct Suggestion: Sendable, Hashable, Encodable {
    /// The user.
    public var user: UserID
    /// Interests in common (case-insensitive).
    public var sharedInterests: Int
    /// Whether both live in the same city.
    public var sameCity: Bool
    /// Friends in common.
    public var mutual: Int
}

extension ProjectionState {
    func friendList(_ user: UserID) -> [UserID] {
        guard let u = users.index(of: user.rawValue) else { return [] }
        return graph.friends[Int(u)].map { UserID(users[$0]) }.sorted()
    }

    func friendRequests(_ user: UserID) -> FriendRequests {
        guard let u = users.index(of: user.rawValue) else { return FriendRequests(incoming: [], outgoing: []) }
        func ordered(_ requests: [Int32: UInt64]) -> [UserID] {
            requests.sorted { $0.value < $1.value }.map { UserID(users[$0.key]) }
        }
        return FriendRequests(incoming: ordered(graph.incoming[Int(u)]), outgoing: ordered(graph.outgoing[Int(u)]))
    }

    func connectionList(_ user: UserID) -> [Connection] {
        guard let u = users.index(of: user.rawValue) else { return [] }
        return graph.connections(of: u).map { Connection(user: UserID(users[$0.key]), mutual: $0.value) }
            .sorted { $0.mutual != $1.mutual ? $0.mutual > $1.mutual : $0.user < $1.user }
    }

    func relationship(_ viewer: UserID, _ user: UserID) -> Relationship {
        if viewer == user { return Relationship(kind: .self, label: "You", mutual: 0) }
        guard let a = users.index(of: viewer.rawValue), let b = users.index(of: user.rawValue) else {
            return Relationship(kind: .none, label: "Not connected", mutual: 0)
        }
        let mutual = graph.mutualCount(a, b)
        if graph.isBlocked(a, b) { return Relationship(kind: .blocked, label: "Blocked", mutual: mutual) }
        if graph.areFriends(a, b) { return Relationship(kind: .friend, label: "Friend", mutual: mutual) }
        if graph.isPending(from: a, to: b) {
            return Relationship(kind: .requestSent, label: "Friend request sent", mutual: mutual)
        }
        if graph.isPending(from: b, to: a) {
            return Relationship(kind: .requestReceived, label: "Wants to be friends", mutual: mutual)
        }
        if mutual > 0 {
            return Relationship(
                kind: .connection, label: mutual == 1 ? "1 mutual friend" : "\(mutual) mutual friends", mutual: mutual)
        }
        return Relationship(kind: .none, label: "Not connected", mutual: 0)
    }

    func suggestionList(_ user: UserID) -> [Suggestion] {
        guard let u = users.index(of: user.rawValue) else { return [] }
        let me = accounts.users[Int(u)]
        let myInterests = Set(me.interests.map { $0.lowercased() })
        let myCity = me.location?.city?.lowercased()
        var result: [Suggestion] = []
        for other in 0..<Int32(users.count) where other != u {
            let record = accounts.users[Int(other)]
            guard record.isRegistered, !graph.areFriends(u, other), !graph.isBlocked(u, other) else { continue }
            let shared =
                myInterests.isEmpty ? 0 : Set(record.interests.map { $0.lowercased() }).intersection(myInterests).count
            let sameCity = myCity != nil && record.location?.city?.lowercased() == myCity
            let mutual = graph.mutualCount(u, other)
            guard shared > 0 || sameCity || mutual > 0 else { continue }
            result.append(
                Suggestion(user: UserID(users[other]), sharedInterests: shared, sameCity: sameCity, mutual: mutual))
        }
        return result.sorted {
            if $0.sharedInterests != $1.sharedInterests { return $0.sharedInterests > $1.sharedInterests }
            if $0.sameCity != $1.sameCity { return $0.sameCity }
            if $0.mutual != $1.mutual { return $0.mutual > $1.mutual }
            return $0.user < $1.user
        }
    }
}
