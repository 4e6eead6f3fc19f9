import Crypto

/// Room ids a client names within its own namespace.
///
/// A room's existence is its members' business (DESIGN.md §3, "Safety and moderation"), but room ids share one
/// space: had a client's id for a new room been used as it is, "that id is taken" would tell anyone that a room
/// they cannot see exists, and let them guess ids to find rooms. So the id of a room a user creates is made from
/// the creator and the id the client chose: two users choosing the same id get two rooms, a taken id only ever
/// answers its own creator, and no one can aim at another's room id.
extension RoomID {
    /// The id of the room `creator` names `clientID`: a letter for the kind (`g`, `d` or `a`) and 32 hex digits of
    /// SHA-256 over the kind, the creator's id and `clientID` (each with its length before it), so always within
    /// the id rules. The same three always give the same id; others give another (as SHA-256 never collides).
    public static func named(_ clientID: String, by creator: UserID, kind: RoomKind) -> RoomID {
        var hasher = SHA256()
        for part in ["parley-room", kind.rawValue, creator.rawValue, clientID] {
            var count = UInt64(part.utf8.count).littleEndian
            withUnsafeBytes(of: &count) { hasher.update(bufferPointer: $0) }
            hasher.update(data: Array(part.utf8))
        }
        let digits = Array("0123456789abcdef".utf8)
        var id = [kind.rawValue.utf8.first ?? UInt8(ascii: "r")]
        for byte in hasher.finalize().prefix(16) {
            id.append(digits[Int(byte >> 4)])
            id.append(digits[Int(byte & 0x0f)])
        }
        return RoomID(String(decoding: id, as: UTF8.self))
    }
}

extension Engine {
    /// The id of the room `creator` names `clientID` (``RoomID/named(_:by:kind:)``), once `clientID` passes the id
    /// rules. The server gives the commands that create a room this id, never the client's own.
    /// - Throws: `.invalidID` when `clientID` breaks the id rules.
    public func roomID(named clientID: String, by creator: UserID, kind: RoomKind) throws(ValidationError) -> RoomID {
        try read(needs: []) { (s: borrowing ProjectionState) throws(ValidationError) in try s.checkID(clientID, "room")
        }
        return RoomID.named(clientID, by: creator, kind: kind)
    }
}
