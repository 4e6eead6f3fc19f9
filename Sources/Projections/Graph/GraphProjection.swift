/// Friendships, pending requests and blocks.
///
/// Folds: `FriendRequested`, `FriendRequestAccepted`, `FriendRequestDeclined`, `FriendRequestCancelled`,
/// `Unfriended`, `UserBlocked`, `UserUnblocked`. Blocking ends any friendship and pending request between
/// the two; unblocking restores nothing. A block keeps its position: what the blocked user sends after it is
/// hidden from the blocker (``hides(_:from:at:)``).
struct GraphProjection {
    var friends: [Set<Int32>] = []
    /// Requests a user sent: recipient → position of the request.
    var outgoing: [[Int32: UInt64]] = []
    /// Derived mirror of `outgoing`: sender → position.
    var incoming: [[Int32: UInt64]] = []
    /// Users a user blocked → the position of the block.
    var blocks: [[Int32: UInt64]] = []
    /// Derived mirror of `blocks`.
    var blockedBy: [Set<Int32>] = []

    init() {}

    mutating func addUser() {
        friends.append([])
        outgoing.append([:])
        incoming.append([:])
        blocks.append([:])
        blockedBy.append([])
    }

    func areFriends(_ a: Int32, _ b: Int32) -> Bool { friends[Int(a)].contains(b) }

    func isBlocked(_ a: Int32, _ b: Int32) -> Bool { blocks[Int(a)][b] != nil || blocks[Int(b)][a] != nil }

    /// Whether `viewer` blocked `sender` before `position`: what `sender` did there (a message) is hidden from
    /// `viewer`, as Matrix's ignore list hides it. Only what comes after a block is hidden, and only while it lasts.
    func hides(_ sender: Int32, from viewer: Int32, at position: UInt64) -> Bool {
        guard let since = blocks[Int(viewer)][sender] else { return false }
        return since < position
    }

    func isPending(from a: Int32, to b: Int32) -> Bool { outgoing[Int(a)][b] != nil }

    func mutualCount(_ a: Int32, _ b: Int32) -> Int {
        let (small, large) = friends[Int(a)].count <= friends[Int(b)].count ? (a, b) : (b, a)
        var n = 0
        for f in friends[Int(small)] where friends[Int(large)].contains(f) { n += 1 }
        return n
    }

    mutating func requested(from: Int32, to: Int32, position: UInt64) {
        outgoing[Int(from)][to] = position
        incoming[Int(to)][from] = position
    }

    mutating func clearRequest(from: Int32, to: Int32) {
        outgoing[Int(from)][to] = nil
        incoming[Int(to)][from] = nil
    }

    mutating func accepted(from: Int32, to: Int32) {
        clearRequest(from: from, to: to)
        clearRequest(from: to, to: from)
        friends[Int(from)].insert(to)
        friends[Int(to)].insert(from)
    }

    mutating func unfriended(_ a: Int32, _ b: Int32) {
        friends[Int(a)].remove(b)
        friends[Int(b)].remove(a)
    }

    mutating func blocked(_ user: Int32, _ other: Int32, position: UInt64) {
        // A block already in place keeps its position (the rules refuse a second one; an old log may hold it).
        if blocks[Int(user)][other] == nil { blocks[Int(user)][other] = position }
        blockedBy[Int(other)].insert(user)
        unfriended(user, other)
        clearRequest(from: user, to: other)
        clearRequest(from: other, to: user)
    }

    mutating func unblocked(_ user: Int32, _ other: Int32) {
        blocks[Int(user)][other] = nil
        blockedBy[Int(other)].remove(user)
    }

    /// Friends of friends who are not the user, not friends and not blocked either way → mutual count.
    func connections(of user: Int32) -> [Int32: Int] {
        var counts: [Int32: Int] = [:]
        let mine = friends[Int(user)]
        for friend in mine {
            for candidate in friends[Int(friend)] where candidate != user && !mine.contains(candidate) {
                counts[candidate, default: 0] += 1
            }
        }
        for (candidate, _) in counts where isBlocked(user, candidate) { counts[candidate] = nil }
        return counts
    }

    // MARK: Snapshot

    func write(to writer: inout ByteWriter) {
        writer.count(friends.count)
        for index in friends.indices {
            writer.sortedSet(friends[index])
            let blocked = blocks[index].sorted { $0.key < $1.key }
            writer.count(blocked.count)
            for (other, position) in blocked {
                writer.signed(Int64(other))
                writer.varint(position)
            }
            let requests = outgoing[index].sorted { $0.key < $1.key }
            writer.count(requests.count)
            for (to, position) in requests {
                writer.signed(Int64(to))
                writer.varint(position)
            }
        }
    }

    init(reading reader: inout ByteReader) throws(ByteReaderError) {
        let n = try reader.count()
        for _ in 0..<n { addUser() }
        for index in 0..<n {
            friends[index] = try reader.int32Set()
            let blocked = try reader.count()
            for _ in 0..<blocked {
                let other = try reader.int32()
                let position = try reader.varint()
                guard Int(other) < n, other >= 0 else { throw ByteReaderError(description: "bad user index \(other)") }
                blocks[index][other] = position
                blockedBy[Int(other)].insert(Int32(index))
            }
            let requests = try reader.count()
            for _ in 0..<requests {
                let to = try reader.int32()
                let position = try reader.varint()
                guard Int(to) < n, to >= 0 else { throw ByteReaderError(description: "bad user index \(to)") }
                requested(from: Int32(index), to: to, position: position)
            }
        }
    }
}
