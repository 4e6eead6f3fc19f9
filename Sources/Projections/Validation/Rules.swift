/// The rules of DESIGN.md §3 "Commands and validation", checked against the current state. Each event type's
/// own rules live in its feature folder (`Chat/ChatRules.swift`, ...); this file holds the entry point and the
/// helpers several features share. Commands and the event-level import entry both go through
/// ``ProjectionState/validate(_:actor:)``.
extension ProjectionState {
    static let maximumBodyLength = FieldLimits.bodyLength
    /// The longest id, in UTF-8 bytes (ids are ASCII: bytes and characters alike).
    static let maximumIDBytes = FieldLimits.idBytes

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
        if !actor.isSameID(as: expected.rawValue) {
            throw ValidationError(.wrongActor, "actor \(actor) may not act for \(expected)")
        }
    }

    func requireUser(_ id: UserID) throws(ValidationError) -> Int32 {
        guard let index = registeredUser(id) else { throw ValidationError(.userNotFound, "user \(id) does not exist") }
        return index
    }

    /// Refuses an id that is empty, over ``maximumIDBytes`` bytes, or holds a byte outside ASCII letters, digits
    /// and `-_.:@+`. The set covers what the apps' ids are made of (Firebase uids and push ids, phone numbers,
    /// e-mail addresses, UUIDs, the engine's own `r…`/`m…`) and leaves out what makes ids alias or mislead:
    /// everything beyond ASCII (two spellings of one letter, letters that look alike, combining marks that
    /// make one character of any length), spaces and controls, and `/`, `%`, `#`, `?` that mean something in
    /// a URL path.
    func checkID(_ id: String, _ what: String) throws(ValidationError) {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= Self.maximumIDBytes, bytes.allSatisfy(Self.isIDByte) else {
            // The id as given may be 200 KB of combining marks: the message shows its start.
            let scalars = id.unicodeScalars
            let shown = scalars.count > 40 ? String(String.UnicodeScalarView(scalars.prefix(40))) + "…" : id
            throw ValidationError(
                .invalidID,
                "\(what) id '\(shown)' (\(bytes.count) bytes) must be 1–\(Self.maximumIDBytes) bytes of ASCII letters, "
                    + "digits and - _ . : @ +")
        }
    }

    /// Whether `byte` may appear in an id.
    static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "@"),
            UInt8(ascii: "+"):
            true
        default:
            false
        }
    }

    /// Whether `text` has at most `limit` characters; counts them only when its UTF-8 is longer than that (a
    /// character is at least one byte), since counting grapheme clusters is slow.
    static func count(_ text: String, atMost limit: Int) -> Bool {
        text.utf8.count <= limit || text.count <= limit
    }

    func checkName(_ name: String, _ what: String) throws(ValidationError) {
        if name.allSatisfy(\.isWhitespace) || name.count > FieldLimits.nameLength {
            throw ValidationError(
                .invalidName, "\(what) must be 1–\(FieldLimits.nameLength) characters, not '\(name.prefix(120))'")
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
