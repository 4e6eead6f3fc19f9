/// The rules of the account events (DESIGN.md §3), in the order they are checked.
extension UserRegistered {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        try state.checkID(user.rawValue, "user")
        if state.registeredUser(user) != nil { throw ValidationError(.duplicateID, "user \(user) already exists") }
        if let index = state.users.index(of: user.rawValue), state.accounts.users[Int(index)].isErased {
            throw ValidationError(.userErased, "user \(user) was erased: the id can never be registered again")
        }
        if method == .phone, phone == nil {
            throw ValidationError(.missingContact, "user \(user) signs up by phone but gives no phone number")
        }
        if method == .email, email == nil {
            throw ValidationError(.missingContact, "user \(user) signs up by email but gives no email")
        }
        if let phone {
            try state.checkPhone(phone, user: user)
            if let owner = state.accounts.byPhone[phone] {
                throw ValidationError(.phoneTaken, "phone \(phone) already belongs to user \(state.users[owner])")
            }
        }
        if let email {
            try state.checkEmail(email, user: user)
            if let owner = state.accounts.byEmail[AccountsProjection.normalizedEmail(email)] {
                throw ValidationError(.emailTaken, "email \(email) already belongs to user \(state.users[owner])")
            }
        }
        if let name { try state.checkName(name, "name of user \(user)") }
    }
}

extension ProfileUpdated {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        _ = try state.requireUser(user)
        if let name { try state.checkName(name, "name of user \(user)") }
        if let nickname { try state.checkName(nickname, "nickname of user \(user)") }
        if let photoURL, !ProjectionState.isWebURL(photoURL) {
            throw ValidationError(.invalidURL, "photoURL '\(photoURL)' of user \(user) is not an http(s) URL")
        }
        for dog in dogs ?? [] { try state.checkName(dog.name, "name of a dog of user \(user)") }
    }
}

// MARK: Rule helpers

extension ProjectionState {
    func checkPhone(_ phone: String, user: UserID) throws(ValidationError) {
        if !Self.isE164(phone) {
            throw ValidationError(.invalidPhone, "phone '\(phone)' of user \(user) is not E.164 (like +14155550123)")
        }
    }

    func checkEmail(_ email: String, user: UserID) throws(ValidationError) {
        if !Self.isPlausibleEmail(email) {
            throw ValidationError(.invalidEmail, "email '\(email)' of user \(user) is not a plausible address")
        }
    }

    /// `+`, a non-zero digit, then 6–14 more digits (E.164 allows at most 15 digits).
    static func isE164(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= 8, bytes.count <= 16, bytes[0] == UInt8(ascii: "+"), bytes[1] != UInt8(ascii: "0") else {
            return false
        }
        return bytes.dropFirst().allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    /// `local@domain.tld`: one `@`, no spaces, a dot inside the domain, at most 254 characters.
    static func isPlausibleEmail(_ text: String) -> Bool {
        guard text.count <= 254, !text.contains(where: { $0.isWhitespace }) else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return false }
        let domain = parts[1]
        guard let dot = domain.lastIndex(of: "."), dot != domain.startIndex,
            domain.index(after: dot) != domain.endIndex, !domain.hasPrefix("."), !domain.contains("..")
        else { return false }
        return true
    }
}

extension UserID {
    /// Whether the id is a phone number (E.164, with or without its `+`) or an e-mail address: personal data, which an
    /// id must not be (an id is never erased). A sign-up with such an id is refused (`personalDataAsID`).
    public var looksLikePersonalData: Bool {
        let text = rawValue
        if ProjectionState.isPlausibleEmail(text) { return true }
        return ProjectionState.isE164(text.hasPrefix("+") ? text : "+" + text)
    }
}
