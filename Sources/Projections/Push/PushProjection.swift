import EventLog

/// One of a user's devices, as push reaches it.
struct DeviceRecord: Equatable {
    var platform: PushPlatform
    var appID: String
    /// The token (opened when folded; the device is forgotten when its owner is erased).
    var token: String
    var registeredAt: Int64
}

/// Devices, muted rooms and preview settings: whom a push reaches, and what it may say.
///
/// Folds: `DeviceRegistered`, `DeviceRemoved`, `RoomMuteSet`, `PushSettingsChanged`; `UserErased` forgets all of a
/// user's. Written in the snapshot's accounts part, each token sealed under its owner's key.
struct PushProjection: Equatable {
    /// user index → device id → device.
    var devices: [Int32: [String: DeviceRecord]] = [:]
    /// user index → room → the positions at which the user muted or unmuted it, in order (muted now when their
    /// count is odd): a message is judged by whether its room was muted at its own position.
    var muteChanges: [Int32: [Int32: [UInt64]]] = [:]
    /// The users whose notifications leave the body out.
    var hidesPreviews: Set<Int32> = []
    /// Who holds each push token now (platform, app id and token → user and device), derived from `devices`: a
    /// token registered again, by another user on the same phone or under a new device id, leaves its earlier
    /// holder, so that one phone never gets another account's notifications.
    var tokenHolders: [String: TokenHolder] = [:]

    struct TokenHolder: Hashable {
        var user: Int32
        var device: String
    }

    init() {}

    /// Forgets `user`'s devices, mutes and settings.
    mutating func erase(_ user: Int32) {
        for (device, _) in devices[user] ?? [:] { remove(device: device, of: user) }
        devices[user] = nil
        muteChanges[user] = nil
        hidesPreviews.remove(user)
    }

    /// Gives `device` of `user` the `record`, taking its token from whichever device held it before.
    mutating func register(_ record: DeviceRecord, device: String, of user: Int32) {
        remove(device: device, of: user)
        let key = Self.tokenKey(record)
        if !record.token.isEmpty, let holder = tokenHolders[key] { remove(device: holder.device, of: holder.user) }
        devices[user, default: [:]][device] = record
        if !record.token.isEmpty { tokenHolders[key] = TokenHolder(user: user, device: device) }
    }

    /// Removes `device` of `user` (nothing when there is none).
    mutating func remove(device: String, of user: Int32) {
        guard let record = devices[user]?[device] else { return }
        let key = Self.tokenKey(record)
        if tokenHolders[key] == TokenHolder(user: user, device: device) { tokenHolders[key] = nil }
        devices[user]?[device] = nil
        if devices[user]?.isEmpty == true { devices[user] = nil }
    }

    static func tokenKey(_ record: DeviceRecord) -> String {
        "\(record.platform.rawValue)\u{0}\(record.appID)\u{0}\(record.token)"
    }

    /// Whether `user` had `room` muted at `position` (now, by default).
    func isMuted(_ room: Int32, by user: Int32, at position: UInt64 = .max) -> Bool {
        guard let changes = muteChanges[user]?[room] else { return false }
        return changes.prefix { $0 <= position }.count % 2 == 1
    }

    /// Records that `user` muted (`muted`) or unmuted `room` at `position`; nothing when it already was.
    mutating func set(muted: Bool, room: Int32, by user: Int32, at position: UInt64) {
        guard isMuted(room, by: user) != muted else { return }
        muteChanges[user, default: [:]][room, default: []].append(position)
    }

    /// Writes the section; each token through ``ByteWriter/personal(_:owner:_:)`` under its owner's key.
    func write(to writer: inout ByteWriter, keys: PersonalKeys?, ids: Interner) {
        let owners = devices.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        writer.count(owners.count)
        for (user, list) in owners {
            writer.signed(Int64(user))
            let sorted = list.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            writer.count(sorted.count)
            for (device, record) in sorted {
                writer.string(device)
                writer.rawEnum(record.platform)
                writer.string(record.appID)
                writer.personal(keys, owner: ids[user]) { $0.string(record.token) }
                writer.signed(record.registeredAt)
            }
        }
        let mutes = muteChanges.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        writer.count(mutes.count)
        for (user, rooms) in mutes {
            writer.signed(Int64(user))
            writer.count(rooms.count)
            for (room, changes) in rooms.sorted(by: { $0.key < $1.key }) {
                writer.signed(Int64(room))
                writer.count(changes.count)
                for position in changes { writer.varint(position) }
            }
        }
        writer.count(hidesPreviews.count)
        for user in hidesPreviews.sorted() { writer.signed(Int64(user)) }
    }

    init(reading reader: inout ByteReader, keys: PersonalKeys?, ids: Interner) throws(ByteReaderError) {
        func user(_ reader: inout ByteReader) throws(ByteReaderError) -> Int32 {
            let user = try reader.int32()
            guard user >= 0, Int(user) < ids.count else { throw ByteReaderError(description: "bad device owner") }
            return user
        }
        for _ in 0..<(try reader.count()) {
            let owner = try user(&reader)
            var list: [String: DeviceRecord] = [:]
            for _ in 0..<(try reader.count()) {
                let device = try reader.string()
                let platform = try reader.rawEnum(PushPlatform.self)
                let appID = try reader.string()
                var token = ""
                try reader.personal(keys, owner: ids[owner]) { (fields: inout ByteReader) throws(ByteReaderError) in
                    token = try fields.string()
                }
                let record = DeviceRecord(
                    platform: platform, appID: appID, token: token, registeredAt: try reader.signed())
                list[device] = record
                if !token.isEmpty { tokenHolders[Self.tokenKey(record)] = TokenHolder(user: owner, device: device) }
            }
            devices[owner] = list
        }
        for _ in 0..<(try reader.count()) {
            let owner = try user(&reader)
            var rooms: [Int32: [UInt64]] = [:]
            for _ in 0..<(try reader.count()) {
                let room = try reader.int32()
                var changes: [UInt64] = []
                for _ in 0..<(try reader.count()) { changes.append(try reader.varint()) }
                rooms[room] = changes
            }
            muteChanges[owner] = rooms
        }
        for _ in 0..<(try reader.count()) { hidesPreviews.insert(try user(&reader)) }
    }
}
