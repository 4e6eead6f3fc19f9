/// The rules of the gratitude events (DESIGN.md §3), in the order they are checked.
extension FeelingDefined {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, UserID.system)
        try state.checkID(feeling.rawValue, "feeling")
        if state.gratitude.feelings[feeling] != nil {
            throw ValidationError(.duplicateID, "feeling \(feeling) already exists")
        }
        try state.checkName(name, "name of feeling \(feeling)")
        if emoji.isEmpty || emoji.count > FieldLimits.emojiLength {
            throw ValidationError(
                .invalidEmoji, "feeling \(feeling) needs an emoji (1–\(FieldLimits.emojiLength) characters)")
        }
    }
}

extension GratitudeTagged {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, author)
        _ = try state.requireUser(author)
        try state.checkID(gratitude.rawValue, "gratitude")
        if state.gratitude.ids.contains(gratitude) {
            throw ValidationError(.duplicateID, "gratitude \(gratitude) already exists")
        }
        if state.gratitude.feelings[feeling] == nil {
            throw ValidationError(.feelingNotFound, "feeling \(feeling) is not defined")
        }
        if recipient.allSatisfy(\.isWhitespace) {
            throw ValidationError(.invalidRecipient, "gratitude \(gratitude) names no recipient")
        }
        if body.allSatisfy(\.isWhitespace) {
            throw ValidationError(.emptyBody, "gratitude \(gratitude) has an empty body")
        }
        if body.count > ProjectionState.maximumBodyLength {
            throw ValidationError(
                .bodyTooLong, "gratitude \(gratitude) is over \(ProjectionState.maximumBodyLength) characters")
        }
    }
}
