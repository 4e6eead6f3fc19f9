/// The rules and folds of devices, mutes and push settings.
extension DeviceRegistered {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        _ = try state.requireUser(user)
        try state.checkID(device.rawValue, "device")
        try state.checkID(appID, "app id")
        guard !token.isEmpty, token.utf8.count <= Self.maximumTokenBytes,
            token.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
        else {
            throw ValidationError(
                .invalidToken,
                "a push token is 1–\(Self.maximumTokenBytes) bytes without control characters")
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let u = state.user(user)
        state.push.register(
            DeviceRecord(platform: platform, appID: appID, token: token, registeredAt: time), device: device.rawValue,
            of: u)
    }
}

extension DeviceRemoved {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let u = try state.requireUser(user)
        guard state.push.devices[u]?[device.rawValue] != nil else {
            throw ValidationError(.deviceNotFound, "user \(user) has no device \(device)")
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let u = state.users.index(of: user.rawValue) else { return }
        state.push.remove(device: device.rawValue, of: u)
    }
}

extension RoomMuteSet {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        let roomIndex = try state.requireRoom(room)
        let userIndex = try state.requireUser(user)
        if !state.chat.isMember(userIndex, of: roomIndex) {
            throw ValidationError(.notAMember, "user \(user) is not a member of room \(room)")
        }
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        guard let r = state.rooms.index(of: room.rawValue) else { return }
        state.push.set(muted: muted, room: r, by: state.user(user), at: position)
    }
}

extension PushSettingsChanged {
    func validate(against state: ProjectionState, actor: String) throws(ValidationError) {
        try state.requireActor(actor, user)
        _ = try state.requireUser(user)
    }

    func apply(to state: inout ProjectionState, position: UInt64, time: Int64) {
        let u = state.user(user)
        if hidesPreviews {
            state.push.hidesPreviews.insert(u)
        } else {
            state.push.hidesPreviews.remove(u)
        }
    }
}
