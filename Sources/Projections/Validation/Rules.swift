/// The rules of DESIGN.md §3 "Commands and validation", checked against the current state.
/// Commands and the event-level import entry both go through ``ProjectionState/validate(_:actor:)``.
extension ProjectionState {
    static let maximumBodyLength = 10_000
    static let maximumIDLength = 200

    /// The actor §3 assigns to `event`: from the payload, or from the state for edits and deletions
    /// (the sender) and for activity events other than RSVPs (the host). Nil when the state does not know.
    func expectedActor(for event: DomainEvent) -> String? {
        if let actor = event.payloadActor { return actor }
        switch event {
        case .messageEdited(let e): return senderOf(e.message)
        case .messageDeleted(let e): return senderOf(e.message)
        case .activityUpdated(let e): return hostOf(e.activity)
        case .activityCancelled(let e): return hostOf(e.activity)
        case .guestsInvited(let e): return hostOf(e.activity)
        case .invitationRevoked(let e): return hostOf(e.activity)
        default: return nil
        }
    }

    private func senderOf(_ message: MessageID) -> String? {
        messageIDs.index(of: message.rawValue).map { users[chat.messages[Int($0)].sender] }
    }

    private func hostOf(_ activity: ActivityID) -> String? {
        activityIDs.index(of: activity.rawValue).map { users[activities.activities[Int($0)].host] }
    }

    /// Checks `event`, done by `actor`, against every rule; throws the first broken one.
    func validate(_ event: DomainEvent, actor: String) throws(ValidationError) {
        switch event {
        case .userRegistered(let e):
            try requireActor(actor, e.user)
            try checkID(e.user.rawValue, "user")
            if registeredUser(e.user) != nil { throw ValidationError(.duplicateID, "user \(e.user) already exists") }
            if e.method == .phone, e.phone == nil {
                throw ValidationError(.missingContact, "user \(e.user) signs up by phone but gives no phone number")
            }
            if e.method == .email, e.email == nil {
                throw ValidationError(.missingContact, "user \(e.user) signs up by email but gives no email")
            }
            if let phone = e.phone {
                try checkPhone(phone, user: e.user)
                if let owner = accounts.byPhone[phone] {
                    throw ValidationError(.phoneTaken, "phone \(phone) already belongs to user \(users[owner])")
                }
            }
            if let email = e.email {
                try checkEmail(email, user: e.user)
                if let owner = accounts.byEmail[AccountsProjection.normalizedEmail(email)] {
                    throw ValidationError(.emailTaken, "email \(email) already belongs to user \(users[owner])")
                }
            }
            if let name = e.name { try checkName(name, "name of user \(e.user)") }

        case .profileUpdated(let e):
            try requireActor(actor, e.user)
            _ = try requireUser(e.user)
            if let name = e.name { try checkName(name, "name of user \(e.user)") }
            if let nickname = e.nickname { try checkName(nickname, "nickname of user \(e.user)") }
            if let photoURL = e.photoURL, !Self.isWebURL(photoURL) {
                throw ValidationError(.invalidURL, "photoURL '\(photoURL)' of user \(e.user) is not an http(s) URL")
            }
            for dog in e.dogs ?? [] { try checkName(dog.name, "name of a dog of user \(e.user)") }

        case .friendRequested(let e):
            try requireActor(actor, e.from)
            let (from, to) = (try requireUser(e.from), try requireUser(e.to))
            if from == to {
                throw ValidationError(.selfRelationship, "user \(e.from) cannot send a friend request to themself")
            }
            if graph.isBlocked(from, to) {
                throw ValidationError(.blocked, "users \(e.from) and \(e.to): one has blocked the other")
            }
            if graph.areFriends(from, to) {
                throw ValidationError(.alreadyFriends, "users \(e.from) and \(e.to) are already friends")
            }
            if graph.isPending(from: from, to: to) || graph.isPending(from: to, to: from) {
                throw ValidationError(
                    .requestPending, "a friend request between \(e.from) and \(e.to) is already pending")
            }

        case .friendRequestAccepted(let e):
            try requireActor(actor, e.to)
            try requirePending(e.from, e.to)
        case .friendRequestDeclined(let e):
            try requireActor(actor, e.to)
            try requirePending(e.from, e.to)
        case .friendRequestCancelled(let e):
            try requireActor(actor, e.from)
            try requirePending(e.from, e.to)

        case .unfriended(let e):
            try requireActor(actor, e.user)
            let (a, b) = (try requireUser(e.user), try requireUser(e.friend))
            if !graph.areFriends(a, b) {
                throw ValidationError(.notFriends, "users \(e.user) and \(e.friend) are not friends")
            }

        case .userBlocked(let e):
            try requireActor(actor, e.user)
            let (a, b) = (try requireUser(e.user), try requireUser(e.blocked))
            if a == b { throw ValidationError(.selfRelationship, "user \(e.user) cannot block themself") }
            if graph.blocks[Int(a)].contains(b) {
                throw ValidationError(.alreadyBlocked, "user \(e.user) has already blocked \(e.blocked)")
            }

        case .userUnblocked(let e):
            try requireActor(actor, e.user)
            let (a, b) = (try requireUser(e.user), try requireUser(e.blocked))
            if !graph.blocks[Int(a)].contains(b) {
                throw ValidationError(.notBlocked, "user \(e.user) has not blocked \(e.blocked)")
            }

        case .roomCreated(let e):
            try requireActor(actor, e.by)
            try checkID(e.room.rawValue, "room")
            if rooms.index(of: e.room.rawValue) != nil {
                throw ValidationError(.duplicateID, "room \(e.room) already exists")
            }
            let by = try requireUser(e.by)
            var members: [Int32] = []
            for member in e.members {
                let index = try requireUser(member)
                if !members.contains(index) { members.append(index) }
            }
            if !members.contains(by) {
                throw ValidationError(.invalidMembers, "room \(e.room): its creator \(e.by) must be one of its members")
            }
            switch e.kind {
            case .direct:
                guard members.count == 2, e.members.count == 2 else {
                    throw ValidationError(
                        .invalidMembers,
                        "direct room \(e.room) needs exactly two distinct members, not \(e.members.map(\.rawValue))")
                }
                if let existing = chat.directRooms[ChatProjection.pairKey(members[0], members[1])] {
                    throw ValidationError(
                        .directRoomExists,
                        "users \(e.members[0]) and \(e.members[1]) already have direct room \(rooms[existing])")
                }
                if graph.isBlocked(members[0], members[1]) {
                    throw ValidationError(
                        .blocked, "users \(e.members[0]) and \(e.members[1]): one has blocked the other")
                }
            case .group:
                try checkName(e.name ?? "", "name of group room \(e.room)")
            case .activity:
                throw ValidationError(
                    .invalidMembers,
                    "room \(e.room): RoomCreated makes direct and group rooms; ActivityHosted makes activity rooms")
            }

        case .memberJoined(let e):
            try requireActor(actor, e.user)
            let room = try requireRoom(e.room)
            let user = try requireUser(e.user)
            guard chat.rooms[Int(room)].kind == .group else {
                throw ValidationError(
                    .notAGroupRoom, "room \(e.room) is not a group room; only group rooms can be joined")
            }
            if chat.isMember(user, of: room) {
                throw ValidationError(.alreadyMember, "user \(e.user) is already a member of room \(e.room)")
            }

        case .memberLeft(let e):
            try requireActor(actor, e.user)
            let room = try requireRoom(e.room)
            let user = try requireUser(e.user)
            guard chat.rooms[Int(room)].kind == .group else {
                throw ValidationError(
                    .notAGroupRoom, "room \(e.room) is not a group room; only group rooms can be left")
            }
            if !chat.isMember(user, of: room) {
                throw ValidationError(.notAMember, "user \(e.user) is not a member of room \(e.room)")
            }

        case .messageSent(let e):
            try requireActor(actor, e.sender)
            let room = try requireRoom(e.room)
            let sender = try requireUser(e.sender)
            if !chat.isMember(sender, of: room) {
                throw ValidationError(.notAMember, "user \(e.sender) is not a member of room \(e.room)")
            }
            let record = chat.rooms[Int(room)]
            if record.kind == .direct, let other = record.members.first(where: { $0.user != sender })?.user,
                graph.isBlocked(sender, other)
            {
                throw ValidationError(.blocked, "users \(e.sender) and \(users[other]): one has blocked the other")
            }
            try checkNewMessage(e)
            if let replyTo = e.replyTo {
                guard let target = messageIDs.index(of: replyTo.rawValue), chat.messages[Int(target)].room == room
                else {
                    throw ValidationError(.messageNotFound, "message \(replyTo) (replied to) is not in room \(e.room)")
                }
            }

        case .messageEdited(let e):
            let message = try requireMessage(e.message, in: e.room)
            let record = chat.messages[Int(message)]
            if users[record.sender] != actor {
                throw ValidationError(
                    .notTheSender, "user \(actor) did not send message \(e.message); only its sender edits it")
            }
            if record.isDeleted { throw ValidationError(.messageDeleted, "message \(e.message) was deleted") }
            try checkBody(e.body, required: true, message: e.message)

        case .messageDeleted(let e):
            let message = try requireMessage(e.message, in: e.room)
            let record = chat.messages[Int(message)]
            if users[record.sender] != actor {
                throw ValidationError(
                    .notTheSender, "user \(actor) did not send message \(e.message); only its sender deletes it")
            }
            if record.isDeleted { throw ValidationError(.messageDeleted, "message \(e.message) was already deleted") }

        case .messagesRead(let e):
            try requireActor(actor, e.user)
            let room = try requireRoom(e.room)
            let user = try requireUser(e.user)
            if !chat.isMember(user, of: room) {
                throw ValidationError(.notAMember, "user \(e.user) is not a member of room \(e.room)")
            }
            _ = try requireMessage(e.upTo, in: e.room)

        case .roomHidden(let e):
            try requireActor(actor, e.user)
            let room = try requireRoom(e.room)
            let user = try requireUser(e.user)
            if !chat.isMember(user, of: room) {
                throw ValidationError(.notAMember, "user \(e.user) is not a member of room \(e.room)")
            }

        case .activityHosted(let e):
            try requireActor(actor, e.host)
            _ = try requireUser(e.host)
            try checkID(e.activity.rawValue, "activity")
            try checkID(e.room.rawValue, "room")
            if activityIDs.index(of: e.activity.rawValue) != nil {
                throw ValidationError(.duplicateID, "activity \(e.activity) already exists")
            }
            if rooms.index(of: e.room.rawValue) != nil {
                throw ValidationError(.duplicateID, "room \(e.room) already exists")
            }
            try checkTitle(e.title, activity: e.activity)
            try checkTimes(startsAt: e.startsAt, endsAt: e.endsAt, activity: e.activity)

        case .activityUpdated(let e):
            let activity = try requireOpenActivity(e.activity, host: actor)
            if let title = e.title { try checkTitle(title, activity: e.activity) }
            let record = activities.activities[Int(activity)]
            try checkTimes(
                startsAt: e.startsAt ?? record.startsAt, endsAt: e.endsAt ?? record.endsAt, activity: e.activity)

        case .activityCancelled(let e):
            _ = try requireOpenActivity(e.activity, host: actor)

        case .guestsInvited(let e):
            let activity = try requireOpenActivity(e.activity, host: actor)
            let record = activities.activities[Int(activity)]
            if e.guests.isEmpty {
                throw ValidationError(.noGuests, "an invitation to activity \(e.activity) names no guests")
            }
            var seen: Set<Int32> = []
            for guest in e.guests {
                let index = try requireUser(guest)
                if index == record.host || record.guestIndex(index) != nil || !seen.insert(index).inserted {
                    throw ValidationError(.alreadyInvited, "user \(guest) is already invited to activity \(e.activity)")
                }
                if !isFriendOrConnection(index, of: record.host) {
                    throw ValidationError(
                        .notFriendOrConnection,
                        "user \(guest) is neither a friend nor a connection of host \(users[record.host])")
                }
            }

        case .invitationRevoked(let e):
            let activity = try requireOpenActivity(e.activity, host: actor)
            guard let guest = users.index(of: e.guest.rawValue),
                activities.activities[Int(activity)].guestIndex(guest) != nil
            else { throw ValidationError(.notInvited, "user \(e.guest) is not invited to activity \(e.activity)") }

        case .rsvpGiven(let e):
            try requireActor(actor, e.user)
            let activity = try requireActivity(e.activity)
            let user = try requireUser(e.user)
            let record = activities.activities[Int(activity)]
            if record.isCancelled { throw ValidationError(.activityCancelled, "activity \(e.activity) was cancelled") }
            if record.host != user && record.guestIndex(user) == nil {
                throw ValidationError(.notInvited, "user \(e.user) is not invited to activity \(e.activity)")
            }

        case .feelingDefined(let e):
            try requireActor(actor, UserID.system)
            try checkID(e.feeling.rawValue, "feeling")
            if gratitude.feelings[e.feeling.rawValue] != nil {
                throw ValidationError(.duplicateID, "feeling \(e.feeling) already exists")
            }
            try checkName(e.name, "name of feeling \(e.feeling)")
            if e.emoji.isEmpty || e.emoji.count > 16 {
                throw ValidationError(.invalidEmoji, "feeling \(e.feeling) needs an emoji (1–16 characters)")
            }

        case .gratitudeTagged(let e):
            try requireActor(actor, e.author)
            _ = try requireUser(e.author)
            try checkID(e.gratitude.rawValue, "gratitude")
            if gratitude.ids.contains(e.gratitude.rawValue) {
                throw ValidationError(.duplicateID, "gratitude \(e.gratitude) already exists")
            }
            if gratitude.feelings[e.feeling.rawValue] == nil {
                throw ValidationError(.feelingNotFound, "feeling \(e.feeling) is not defined")
            }
            if e.recipient.allSatisfy(\.isWhitespace) {
                throw ValidationError(.invalidRecipient, "gratitude \(e.gratitude) names no recipient")
            }
            if e.body.allSatisfy(\.isWhitespace) {
                throw ValidationError(.emptyBody, "gratitude \(e.gratitude) has an empty body")
            }
            if e.body.count > Self.maximumBodyLength {
                throw ValidationError(
                    .bodyTooLong, "gratitude \(e.gratitude) is over \(Self.maximumBodyLength) characters")
            }
        }
    }

    /// The guests of `invitation` who may be invited, as an invitation of its own, and a problem for each one left
    /// out (an unknown user, one already invited or named twice, one neither a friend nor a connection of the
    /// host). Nil when the invitation fails as a whole (the activity, its host) or no guest may be invited.
    func invitableGuests(of invitation: GuestsInvited, actor: String) -> (
        invitation: GuestsInvited, dropped: [ValidationError]
    )? {
        let guestRules: Set<ValidationError.Code> = [.userNotFound, .alreadyInvited, .notFriendOrConnection]
        var kept: [UserID] = []
        var named: Set<UserID> = []
        var dropped: [ValidationError] = []
        for guest in invitation.guests {
            do throws(ValidationError) {
                guard named.insert(guest).inserted else {
                    throw ValidationError(
                        .alreadyInvited, "user \(guest) is already invited to activity \(invitation.activity)")
                }
                try validate(
                    .guestsInvited(GuestsInvited(activity: invitation.activity, guests: [guest])), actor: actor)
                kept.append(guest)
            } catch {
                guard guestRules.contains(error.code) else { return nil }
                var problem = error
                problem.message += "; left out of the invitation, which was kept for its other guests"
                dropped.append(problem)
            }
        }
        guard !kept.isEmpty else { return nil }
        return (GuestsInvited(activity: invitation.activity, guests: kept), dropped)
    }

    /// Whether `user` is a friend of `host`, or a friend of one of host's friends and not blocked either way.
    func isFriendOrConnection(_ user: Int32, of host: Int32) -> Bool {
        if graph.areFriends(host, user) { return true }
        if user == host || graph.isBlocked(host, user) { return false }
        let theirs = graph.friends[Int(user)]
        for friend in graph.friends[Int(host)] where theirs.contains(friend) { return true }
        return false
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

    func requireRoom(_ id: RoomID) throws(ValidationError) -> Int32 {
        guard let index = rooms.index(of: id.rawValue) else {
            throw ValidationError(.roomNotFound, "room \(id) does not exist")
        }
        return index
    }

    func requireMessage(_ id: MessageID, in room: RoomID) throws(ValidationError) -> Int32 {
        guard let index = messageIDs.index(of: id.rawValue), rooms[chat.messages[Int(index)].room] == room.rawValue
        else {
            throw ValidationError(.messageNotFound, "message \(id) does not exist in room \(room)")
        }
        return index
    }

    func requireActivity(_ id: ActivityID) throws(ValidationError) -> Int32 {
        guard let index = activityIDs.index(of: id.rawValue) else {
            throw ValidationError(.activityNotFound, "activity \(id) does not exist")
        }
        return index
    }

    /// The activity, when `host` hosts it and it is not cancelled.
    func requireOpenActivity(_ id: ActivityID, host: String) throws(ValidationError) -> Int32 {
        let activity = try requireActivity(id)
        let record = activities.activities[Int(activity)]
        if users[record.host] != host {
            throw ValidationError(
                .notTheHost, "user \(host) is not the host of activity \(id); \(users[record.host]) is")
        }
        if record.isCancelled { throw ValidationError(.activityCancelled, "activity \(id) was cancelled") }
        return activity
    }

    func requirePending(_ from: UserID, _ to: UserID) throws(ValidationError) {
        let (a, b) = (try requireUser(from), try requireUser(to))
        if !graph.isPending(from: a, to: b) {
            throw ValidationError(.noPendingRequest, "there is no pending friend request from \(from) to \(to)")
        }
    }

    func checkNewMessage(_ e: MessageSent) throws(ValidationError) {
        try checkID(e.message.rawValue, "message")
        if messageIDs.index(of: e.message.rawValue) != nil {
            throw ValidationError(.duplicateID, "message \(e.message) already exists")
        }
        switch e.kind {
        case .text:
            try checkBody(e.body ?? "", required: true, message: e.message)
        case .image, .video:
            guard let media = e.media, Self.isWebURL(media.url) else {
                throw ValidationError(
                    .invalidMedia, "\(e.kind.rawValue) message \(e.message) needs an http(s) media URL")
            }
            if let body = e.body { try checkBody(body, required: false, message: e.message) }
        }
    }

    func checkBody(_ body: String, required: Bool, message: MessageID) throws(ValidationError) {
        if required, body.allSatisfy(\.isWhitespace) {
            throw ValidationError(.emptyBody, "message \(message) has an empty body")
        }
        if !Self.count(body, atMost: Self.maximumBodyLength) {
            throw ValidationError(.bodyTooLong, "message \(message) is over \(Self.maximumBodyLength) characters")
        }
    }

    func checkTitle(_ title: String, activity: ActivityID) throws(ValidationError) {
        if title.allSatisfy(\.isWhitespace) || title.count > 200 {
            throw ValidationError(.invalidTitle, "activity \(activity) needs a title of 1–200 characters")
        }
    }

    func checkTimes(startsAt: Int64, endsAt: Int64?, activity: ActivityID) throws(ValidationError) {
        if let endsAt, endsAt < startsAt {
            throw ValidationError(
                .invalidTime,
                "activity \(activity) ends (\(Timestamp.format(endsAt))) before it starts (\(Timestamp.format(startsAt)))"
            )
        }
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
