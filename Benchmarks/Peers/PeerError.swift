import EventLog
import Foundation

/// A failure of the comparison itself or of a peer, said in one line.
struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension EventID {
    /// The 16 bytes, big-endian (the id as stored by every peer).
    var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// The id as a UUID (PostgreSQL's `uuid` column).
    var uuidBytes: uuid_t {
        let b = bytes
        return (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
    }
}
