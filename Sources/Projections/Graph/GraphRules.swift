/// The rules of the friendship graph's events (DESIGN.md §3), in the order they are checked.
extension FriendRequested {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, from)
        let (a, b) = (try state.requireUser(from), try state.requireUser(to))
        if a == b {
            throw ValidationError(.selfRelationship, "user \(from) cannot send a friend request to themself")
        }
        if state.graph.isBlocked(a, b) {
            throw ValidationError(.blocked, "users \(from) and \(to): one has blocked the other")
        }
        if state.graph.areFriends(a, b) {
            throw ValidationError(.alreadyFriends, "users \(from) and \(to) are already friends")
        }
        if state.graph.isPending(from: a, to: b) || state.graph.isPending(from: b, to: a) {
            throw ValidationError(.requestPending, "a friend request between \(from) and \(to) is already pending")
        }
    }
}

extension FriendRequestAccepted {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, to)
        try state.requirePending(from, to)
    }
}

extension FriendRequestDeclined {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, to)
        try state.requirePending(from, to)
    }
}

extension FriendRequestCancelled {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, from)
        try state.requirePending(from, to)
    }
}

extension Unfriended {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let (a, b) = (try state.requireUser(user), try state.requireUser(friend))
        if !state.graph.areFriends(a, b) {
            throw ValidationError(.notFriends, "users \(user) and \(friend) are not friends")
        }
    }
}

extension UserBlocked {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let (a, b) = (try state.requireUser(user), try state.requireUser(blocked))
        if a == b { throw ValidationError(.selfRelationship, "user \(user) cannot block themself") }
        if state.graph.blocks[Int(a)][b] != nil {
            throw ValidationError(.alreadyBlocked, "user \(user) has already blocked \(blocked)")
        }
    }
}

extension UserUnblocked {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let (a, b) = (try state.requireUser(user), try state.requireUser(blocked))
        if state.graph.blocks[Int(a)][b] == nil {
            throw ValidationError(.notBlocked, "user \(user) has not blocked \(blocked)")
        }
    }
}

// MARK: Rule helpers

extension ProjectionState {
    func requirePending(_ from: UserID, _ to: UserID) throws(ValidationError) {
        let (a, b) = (try requireUser(from), try requireUser(to))
        if !graph.isPending(from: a, to: b) {
            throw ValidationError(.noPendingRequest, "there is no pending friend request from \(from) to \(to)")
        }
    }
}
