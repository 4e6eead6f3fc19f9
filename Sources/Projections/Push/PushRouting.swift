import EventLog

/// Whom an event notifies, and what it says to each of their devices.
extension ProjectionState {
    /// The notifications `envelope` (read from the log, its personal fields opened) makes, device by device.
    ///
    /// A message notifies every other member of its room who had not muted it at its position, does not have its
    /// sender blocked, and has not read past it; a friend request its recipient; an invitation each guest; an answer the activity's
    /// host. Never the actor, never an erased user, never a user without devices.
    func pushNotifications(for envelope: EventEnvelope) -> [PushNotification] {
        // An event whose seal could not be opened says nothing a notification could show.
        guard let id = envelope.id, let position = envelope.position?.rawValue, !envelope.event.isSealed else {
            return []
        }
        let actor = envelope.actor.flatMap { users.index(of: $0) }
        var made: [PushNotification] = []
        func notify(
            _ recipient: Int32, kind: PushNotification.Kind, from sender: Int32, body: String?, room: Int32?,
            activity: ActivityID? = nil
        ) {
            // Nothing about an erased sender either: their name and words are gone.
            guard recipient != actor, recipient != sender, !accounts.users[Int(recipient)].isErased,
                !accounts.users[Int(sender)].isErased, let devices = push.devices[recipient], !devices.isEmpty
            else { return }
            let title = displayName(of: sender) ?? users[sender]
            let preview = push.hidesPreviews.contains(recipient) ? nil : body.map(Self.preview)
            let badge = totalUnread(of: recipient)
            let user = UserID(users[recipient])
            // A token that could not be opened (its key unreadable when a snapshot was read) reaches no one.
            for (device, record) in devices.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
            where !record.token.isEmpty {
                made.append(
                    PushNotification(
                        id: "\(id)/\(user.rawValue)/\(device)", event: id.description, kind: kind, user: user,
                        device: DeviceID(device), platform: record.platform, appID: record.appID,
                        token: record.token, title: title, body: preview, room: room.map { RoomID(rooms[$0]) },
                        activity: activity, position: position, badge: badge))
            }
        }
        switch envelope.event {
        case .messageSent(let e):
            guard let r = rooms.index(of: e.room.rawValue), let s = users.index(of: e.sender.rawValue) else { break }
            let body = e.body.flatMap { $0.isEmpty ? nil : $0 } ?? "[\(e.kind.rawValue)]"
            for member in chat.rooms[Int(r)].members
            where !push.isMuted(r, by: member.user, at: position) && member.readMarker < position
                && !graph.hides(s, from: member.user, at: position)
            {
                notify(member.user, kind: .message, from: s, body: body, room: r)
            }
        case .friendRequested(let e):
            guard let from = users.index(of: e.from.rawValue), let to = users.index(of: e.to.rawValue) else { break }
            notify(to, kind: .friendRequest, from: from, body: nil, room: nil)
        case .guestsInvited(let e):
            guard let a = activityIDs.index(of: e.activity.rawValue) else { break }
            let record = activities.activities[Int(a)]
            for guest in e.guests {
                guard let g = users.index(of: guest.rawValue) else { continue }
                notify(
                    g, kind: .invitation, from: record.host, body: record.title, room: record.room,
                    activity: e.activity)
            }
        case .rsvpGiven(let e):
            guard let a = activityIDs.index(of: e.activity.rawValue), let guest = users.index(of: e.user.rawValue)
            else { break }
            let record = activities.activities[Int(a)]
            notify(
                record.host, kind: .rsvp, from: guest, body: e.answer.rawValue, room: record.room,
                activity: e.activity)
        default: break
        }
        return made
    }

    /// The unread messages of every room in `user`'s list (the sum of their rooms' unread counts).
    func totalUnread(of user: Int32) -> Int {
        chat.userRooms[Int(user)].reduce(0) { total, room in
            guard !chat.isHidden(room, from: user, graph: graph),
                let index = chat.rooms[Int(room)].memberIndex(user)
            else { return total }
            return total + Int(chat.rooms[Int(room)].members[index].unread)
        }
    }

    /// `text` cut to ``PushNotification/maximumPreviewLength`` characters.
    static func preview(_ text: String) -> String {
        text.count > PushNotification.maximumPreviewLength
            ? String(text.prefix(PushNotification.maximumPreviewLength - 1)) + "…" : text
    }
}
