import EventLog

/// The one error type of the Projections module: a broken rule, a bad import line, an engine failure.
///
/// Switch on ``code``; ``message`` names the ids involved.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule was broken, as a value callers can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The name.
        public let name: String
        /// Makes a value from its fields.
        public init(_ name: String) { self.name = name }
        /// The code's name.
        public var description: String { name }

        // Accounts
        /// A user id that no `UserRegistered` introduced.
        public static let userNotFound = Code("userNotFound")
        /// An id (user, room, message, activity, feeling, gratitude) that is already taken.
        public static let duplicateID = Code("duplicateID")
        /// An id that is empty, over 128 bytes, or holds a byte other than ASCII letters, digits and `-_.:@+`.
        public static let invalidID = Code("invalidID")
        /// A phone number that is not E.164 (`+` then 8–15 digits, no leading zero).
        public static let invalidPhone = Code("invalidPhone")
        /// An email address that is not plausible (`local@domain.tld`).
        public static let invalidEmail = Code("invalidEmail")
        /// A name that is not 1–100 characters.
        public static let invalidName = Code("invalidName")
        /// A sign-up by phone without a phone, or by email without an email.
        public static let missingContact = Code("missingContact")
        /// A phone number another user registered with.
        public static let phoneTaken = Code("phoneTaken")
        /// An email another user registered with.
        public static let emailTaken = Code("emailTaken")
        /// A URL that is not http(s).
        public static let invalidURL = Code("invalidURL")
        /// The event's actor may not do this act (§3 actor rules).
        public static let wrongActor = Code("wrongActor")
        /// A user who was erased: the id can never act, be written about or be registered again.
        public static let userErased = Code("userErased")
        /// A user id that is a phone number or an e-mail address: ids are not personal data (they cannot be
        /// erased), so such a sign-up is refused; an import maps them to opaque ids.
        public static let personalDataAsID = Code("personalDataAsID")

        // Moderation
        /// A report id no `ReportFiled` introduced.
        public static let reportNotFound = Code("reportNotFound")
        /// A report acted on already.
        public static let alreadyResolved = Code("alreadyResolved")
        /// An action that does not fit the report (removing a message of a report about a user).
        public static let invalidAction = Code("invalidAction")
        /// A report's reason that is empty or too long.
        public static let invalidReason = Code("invalidReason")
        /// Lifting a suspension that is not there.
        public static let notSuspended = Code("notSuspended")
        /// A suspended user's command.
        public static let suspended = Code("suspended")

        // Push
        /// A device id the user has not registered (or removed already).
        public static let deviceNotFound = Code("deviceNotFound")
        /// A push token that is empty, too long, or holds control characters.
        public static let invalidToken = Code("invalidToken")

        // Graph
        /// A friend request (or block) aimed at oneself.
        public static let selfRelationship = Code("selfRelationship")
        /// The two users are already friends.
        public static let alreadyFriends = Code("alreadyFriends")
        /// One of the two users blocked the other.
        public static let blocked = Code("blocked")
        /// A request between the two is already pending (either way).
        public static let requestPending = Code("requestPending")
        /// Accept, decline or cancel without a pending request.
        public static let noPendingRequest = Code("noPendingRequest")
        /// Unfriend without a friendship.
        public static let notFriends = Code("notFriends")
        /// The user already blocked that user.
        public static let alreadyBlocked = Code("alreadyBlocked")
        /// Unblock without a block.
        public static let notBlocked = Code("notBlocked")

        // Rooms and messages
        /// A room id that does not exist.
        public static let roomNotFound = Code("roomNotFound")
        /// A room's member list is wrong (a direct room needs exactly two distinct members, the creator among them).
        public static let invalidMembers = Code("invalidMembers")
        /// A direct room for that pair exists already.
        public static let directRoomExists = Code("directRoomExists")
        /// Joining or leaving a room that is not a group room.
        public static let notAGroupRoom = Code("notAGroupRoom")
        /// The user is already a member.
        public static let alreadyMember = Code("alreadyMember")
        /// The user is not a member of the room.
        public static let notAMember = Code("notAMember")
        /// A text message (or an edit) without a body.
        public static let emptyBody = Code("emptyBody")
        /// A body over 10,000 characters.
        public static let bodyTooLong = Code("bodyTooLong")
        /// An image or video message without an http(s) media URL.
        public static let invalidMedia = Code("invalidMedia")
        /// A message id that does not exist (in that room).
        public static let messageNotFound = Code("messageNotFound")
        /// Someone other than the sender edits or deletes a message.
        public static let notTheSender = Code("notTheSender")
        /// Someone other than a group room's owner (its creator) removes a member.
        public static let notTheOwner = Code("notTheOwner")
        /// The message was deleted; it stays deleted.
        public static let messageDeleted = Code("messageDeleted")

        // Activities
        /// An activity id that does not exist.
        public static let activityNotFound = Code("activityNotFound")
        /// Someone other than the host changes the activity or invites.
        public static let notTheHost = Code("notTheHost")
        /// The activity was cancelled; nothing changes on it.
        public static let activityCancelled = Code("activityCancelled")
        /// A title that is not 1–200 characters.
        public static let invalidTitle = Code("invalidTitle")
        /// An end before the start.
        public static let invalidTime = Code("invalidTime")
        /// An invitation to someone who is neither a friend nor a connection of the host.
        public static let notFriendOrConnection = Code("notFriendOrConnection")
        /// An invitation to someone who is already invited, or to the host.
        public static let alreadyInvited = Code("alreadyInvited")
        /// An invitation with no guests.
        public static let noGuests = Code("noGuests")
        /// An RSVP or revocation for someone who is not invited.
        public static let notInvited = Code("notInvited")

        // Gratitude
        /// A gratitude tagged with a feeling nobody defined.
        public static let feelingNotFound = Code("feelingNotFound")
        /// A feeling without an emoji.
        public static let invalidEmoji = Code("invalidEmoji")
        /// A gratitude without a recipient.
        public static let invalidRecipient = Code("invalidRecipient")

        // Import and storage
        /// An event type this build does not know.
        public static let unknownEventType = Code("unknownEventType")
        /// A payload or JSON line that does not decode.
        public static let undecodable = Code("undecodable")
        /// An event id already used (in the log or earlier in the batch) by an event with another type,
        /// stream or payload; an identical repeat is a silent duplicate instead.
        public static let conflictingID = Code("conflictingID")
        /// The stream given for an event is not the one §3 assigns to it.
        public static let wrongStream = Code("wrongStream")
        /// An event that encodes to more than the 1 MiB one record may hold.
        public static let recordTooLarge = Code("recordTooLarge")
        /// The store failed underneath; ``ValidationError/storageError`` keeps its code and errno.
        public static let storage = Code("storage")

        // Queries
        /// A log position after the one the state is at (a `since` no answer gave).
        public static let positionAhead = Code("positionAhead")
    }

    /// Which rule.
    public var code: Code
    /// What went wrong, naming the ids involved.
    public var message: String
    /// For a batch of events (import), the index of the offending event.
    public var index: Int?
    /// For `.storage`, the store's own error, with its code (`.locked`, `.noSpace`, `.corruptBatch`, …) and
    /// errno: switch on `storageError?.code`, never on the message.
    public var storageError: EventLogError?

    /// Makes a value from its fields.
    public init(_ code: Code, _ message: String, index: Int? = nil) {
        self.code = code
        self.message = message
        self.index = index
    }

    /// The error for a record the store's limits refuse before anything is written: `.recordTooLarge` for
    /// one over 1 MiB, else `.storage` with the store's error kept.
    init(refused problem: EventLogError, _ record: ProposedRecord) {
        if problem.code == .recordTooLarge {
            self.init(
                .recordTooLarge,
                "this \(record.type) is \(record.payload.count) bytes encoded, over the limit of "
                    + "\(EventLog.maximumRecordSize) bytes (1 MiB) for one event")
        } else {
            self.init(storage: problem, doing: "appending \(record.type)")
        }
        storageError = problem
    }

    /// A `.storage` error for `error` while `doing` something: the message says both, the cause is kept.
    public init(storage error: EventLogError, doing: String) {
        self.init(.storage, "\(doing) failed: \(error.message)")
        storageError = error
    }

    /// The code and message, prefixed with the event index when there is one.
    public var description: String {
        if let index { return "event \(index): \(code): \(message)" }
        return "\(code): \(message)"
    }
}

/// Every problem of a batch of events (import validation), each with its index.
public struct BatchValidationError: Error, Sendable, CustomStringConvertible {
    /// Every problem, with its index.
    public var problems: [ValidationError]
    /// Makes a value from its fields.
    public init(problems: [ValidationError]) { self.problems = problems }
    /// Every problem, one per line.
    public var description: String { problems.map(\.description).joined(separator: "\n") }
}
