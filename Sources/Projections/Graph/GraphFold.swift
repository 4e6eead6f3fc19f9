/// How the friendship graph's events fold into the projections.
extension FriendRequested {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(from), state.user(to))
        state.graph.requested(from: a, to: b, position: position)
    }
}

extension FriendRequestAccepted {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(from), state.user(to))
        if state.graph.isPending(from: a, to: b) { state.graph.accepted(from: a, to: b) }
    }
}

extension FriendRequestDeclined {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(from), state.user(to))
        state.graph.clearRequest(from: a, to: b)
    }
}

extension FriendRequestCancelled {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(from), state.user(to))
        state.graph.clearRequest(from: a, to: b)
    }
}

extension Unfriended {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(user), state.user(friend))
        state.graph.unfriended(a, b)
    }
}

extension UserBlocked {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(user), state.user(blocked))
        state.graph.blocked(a, b, position: position)
    }
}

extension UserUnblocked {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let (a, b) = (state.user(user), state.user(blocked))
        guard state.graph.blocks[Int(a)][b] != nil else { return }
        state.graph.unblocked(a, b)
        // What `blocked` sent during the block was hidden from `user` and left out of their unread counts; it
        // shows again, so their counts are made again (a block itself changes none: nothing came after it yet).
        // In room order: the rows' order of change is state (snapshots, digests), a set's order is not.
        for room in state.chat.userRooms[Int(a)].sorted() {
            state.chat.recountUnread(room: room, user: a, position: position, graph: state.graph)
        }
    }
}
