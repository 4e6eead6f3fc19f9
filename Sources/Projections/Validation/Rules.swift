/// The rules of DESIGN.md §3 "Commands and validation", checked against the current state. Each event type's
/// own rules live in its feature folder (`Chat/ChatRules.swift`, ...); this file holds the entry point and the
/// helpers several features share. Commands and the event-level import entry both go through
/// ``ProjectionState/validate(_:actor:)``.
extension ProjectionState {
    static let maximumBodyLength = 10_000
    static let maximumIDLength = 200

    /// Checks `event`, done by `actor`, against every rule; throws the first broken one.
    func validate(_ event: DomainEvent, actor: String) throws(ValidationError) {
        try event.payload.validate(against: self, actor: actor)
    }

    /// The actor §3 assigns to `event`: from the payload, or from the state for edits and deletions
    /// (the sender) and for activity events other than RSVPs (the host). Nil when the state does not know.
    func expectedActor(for event: DomainEvent) -> String? {
        event.payload.expectedActor(in: self)
    }

    // MARK: Rule helpers

    func requireActor(_ actor: String, _ expected: UserID) throws(ValidationError) {
        if actor != expected.rawValue {
            throw ValidationError(.wrongActor, "actor \(actor) may not act for \(expected)")
        }
    }

    func requireUser(_ id: UserID) throws(ValidationError) -> Int32 {
        guard let index = registeredUser(id) else { throw ValidationError(.userNotFound, "user \(id) does not exist") }
        return index
    }

    func checkID(_ id: String, _ what: String) throws(ValidationError) {
        // ASCII scalars are judged by value; only others need the Unicode property tables (a measurable part of
        // a command's time under the sequencer when every id took the table look-up).
        let isValid =
            !id.isEmpty && Self.count(id, atMost: Self.maximumIDLength)
            && !id.unicodeScalars.contains {
                $0.isASCII ? $0.value <= 0x20 || $0.value == 0x7F : $0.properties.isWhitespace
            }
        if !isValid {
            throw ValidationError(
                .invalidID, "\(what) id '\(id)' must be 1–\(Self.maximumIDLength) characters without spaces")
        }
    }

    /// Whether `text` has at most `limit` characters; counts them only when its UTF-8 is longer than that (a
    /// character is at least one byte), since counting grapheme clusters is slow.
    static func count(_ text: String, atMost limit: Int) -> Bool {
        text.utf8.count <= limit || text.count <= limit
    }

    func checkName(_ name: String, _ what: String) throws(ValidationError) {
        if name.allSatisfy(\.isWhitespace) || name.count > 100 {
            throw ValidationError(.invalidName, "\(what) must be 1–100 characters, not '\(name.prefix(120))'")
        }
    }

    /// An `http://` or `https://` URL with a host.
    static func isWebURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        for scheme in ["https://", "http://"] where lowered.hasPrefix(scheme) {
            let rest = lowered.dropFirst(scheme.count)
            return !rest.isEmpty && !rest.hasPrefix("/") && !text.contains(where: { $0.isWhitespace })
        }
        return false
    }
}
