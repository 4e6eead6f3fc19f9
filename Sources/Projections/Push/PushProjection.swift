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
    /// user index → the rooms they muted.
    var muted: [Int32: Set<Int32>] = [:]
    /// The users whose notifications leave the body out.
    var hidesPreviews: Set<Int32> = []

    init() {}

    /// Forgets `user`'s devices, mutes and settings.
    mutating func erase(_ user: Int32) {
        devices[user] = nil
        muted[user] = nil
        hidesPreviews.remove(user)
    }

    /// Whether `user` muted `room`.
    func isMuted(_ room: Int32, by user: Int32) -> Bool { muted[user]?.contains(room) ?? false }

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
        let mutes = muted.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        writer.count(mutes.count)
        for (user, rooms) in mutes {
            writer.signed(Int64(user))
            writer.count(rooms.count)
            for room in rooms.sorted() { writer.signed(Int64(room)) }
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
                list[device] = DeviceRecord(
                    platform: platform, appID: appID, token: token, registeredAt: try reader.signed())
            }
            devices[owner] = list
        }
        for _ in 0..<(try reader.count()) {
            let owner = try user(&reader)
            var rooms = Set<Int32>()
            for _ in 0..<(try reader.count()) { rooms.insert(try reader.int32()) }
            muted[owner] = rooms
        }
        for _ in 0..<(try reader.count()) { hidesPreviews.insert(try user(&reader)) }
    }
}
