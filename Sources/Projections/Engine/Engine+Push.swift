import EventLog

/// Devices, muted rooms, preview settings, and the notifications the push subscription sends.
extension Engine {
    /// Registers `device` of `user` for push, or gives it a new token or app; the token is sealed under the
    /// user's key and forgotten with them.
    /// - Throws: `.userNotFound`, `.invalidID` (the device or app id), `.invalidToken`.
    @discardableResult
    public func registerDevice(
        _ device: DeviceID, of user: UserID, platform: PushPlatform, appID: String, token: String,
        time: Int64? = nil
    ) async throws(ValidationError) -> Position {
        let event = DeviceRegistered(user: user, device: device, platform: platform, appID: appID, token: token)
        return try await execute([.deviceRegistered(event)], actor: user.rawValue, time: time)[0]
    }

    /// Removes `device` of `user`: nothing is pushed to it from the next event on.
    /// - Throws: `.userNotFound`, `.deviceNotFound`.
    @discardableResult
    public func removeDevice(_ device: DeviceID, of user: UserID, time: Int64? = nil) async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.deviceRemoved(DeviceRemoved(user: user, device: device))], actor: user.rawValue, time: time)[0]
    }

    /// Mutes `room` for `user` (`muted` false unmutes it): its messages push nothing to them meanwhile.
    /// - Throws: `.roomNotFound`, `.userNotFound`, `.notAMember`.
    @discardableResult
    public func setMuted(_ muted: Bool, room: RoomID, user: UserID, time: Int64? = nil) async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.roomMuteSet(RoomMuteSet(room: room, user: user, muted: muted))], actor: user.rawValue, time: time)[0]
    }

    /// Sets whether `user`'s notifications leave out what was said.
    /// - Throws: `.userNotFound`.
    @discardableResult
    public func setHidesPreviews(_ hides: Bool, user: UserID, time: Int64? = nil) async throws(ValidationError)
        -> Position
    {
        try await execute(
            [.pushSettingsChanged(PushSettingsChanged(user: user, hidesPreviews: hides))], actor: user.rawValue,
            time: time)[0]
    }

    /// The ids of `user`'s devices, sorted (their tokens stay inside the engine).
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func devices(of user: UserID) throws(ValidationError) -> [DeviceID] {
        try query(needs: .accounts) { s in
            guard let u = s.users.index(of: user.rawValue) else { return [] }
            return (s.push.devices[u] ?? [:]).keys.map(DeviceID.init).sorted()
        }
    }

    /// Whether `user` muted `room`.
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func isMuted(_ room: RoomID, by user: UserID) throws(ValidationError) -> Bool {
        try query(needs: Self.chatSections) { s in
            guard let u = s.users.index(of: user.rawValue), let r = s.rooms.index(of: room.rawValue) else {
                return false
            }
            return s.push.isMuted(r, by: u)
        }
    }

    /// The notifications `events` make (read from the log in order, personal fields opened), device by device, in
    /// the order of the events.
    ///
    /// They are worked out from the state as it is when this is called — the log's durable head, at or after the
    /// events — not as it was at each event's position: the engine keeps only the newest state (what a mute was at a
    /// position is the one exception: mutes keep their history). So the badge is the recipient's total unread count
    /// when the notification is made (later messages counted, later reads too); the members (a member who has read
    /// past the message since gets nothing), devices and previews setting are the current ones; and an event
    /// retried after a failure is worked out again. A recipient erased since gets nothing (their devices are gone with them).
    /// - Throws: ``ValidationError/Code/storage`` when a snapshot section it reads cannot be read.
    public func pushNotifications(for events: [EventEnvelope]) throws(ValidationError) -> [PushNotification] {
        try query(needs: Self.chatSections) { s in events.flatMap { s.pushNotifications(for: $0) } }
    }
}
