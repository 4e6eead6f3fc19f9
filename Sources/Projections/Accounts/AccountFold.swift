/// How the account events fold into the projections.
extension UserRegistered {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        state.accounts.fold(self, user: state.user(user), time: time)
    }
}

extension ProfileUpdated {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        state.accounts.fold(self, user: state.user(user))
    }
}
