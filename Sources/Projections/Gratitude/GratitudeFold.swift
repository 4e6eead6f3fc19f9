/// How the gratitude events fold into the projections.
extension FeelingDefined {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        state.gratitude.defined(self)
    }
}

extension GratitudeTagged {
    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        state.gratitude.tagged(self, author: state.user(author), time: time)
    }
}
