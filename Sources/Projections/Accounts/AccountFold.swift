/// How the account events fold into the projections.
extension UserRegistered {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let u = state.user(user)
        state.accounts.fold(self, user: u, time: time)
        state.touchCounterpartRows(of: u, at: position)
    }
}

extension ProfileUpdated {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let u = state.user(user)
        state.accounts.fold(self, user: u)
        // A direct room's row shows the other member's name and photo.
        if name != nil || photoURL != nil || cleared.contains(.name) || cleared.contains(.photoURL) {
            state.touchCounterpartRows(of: u, at: position)
        }
    }
}
