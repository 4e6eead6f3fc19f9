/// Per user, the rows of one of their views (the rooms of their room list, the activities of their feed) in
/// the order they last changed, each with the position of that change: what ``ProjectionState/sync(_:after:)``
/// reads, so that the rows changed after a position cost only their own number to find, however many rows
/// the user has.
///
/// Each user's rows form a list ordered by last change, newest at its head; changing a row moves it to the head.
/// The lists share one pool of entries and one table from (user, row) to entry, so that a user's first row costs
/// no allocation of its own (replay folds tens of thousands of users). A row that leaves a view (the user left the
/// room, the activity was cancelled) stays: its change is news to a client that showed it.
///
/// A caller that keeps a row's entry (``entry(_:_:)``; the chat keeps it in the ``Member``) touches it by entry,
/// without the table: a message's fold then costs a relink per member and no hash lookup (with the lookup,
/// replaying a million chat events took 17 % longer).
struct ChangeIndex {
    struct Entry: Equatable {
        /// The row: a room or an activity index.
        var row: Int32
        /// The user's entry changed before this one, or -1.
        var older: Int32
        /// The user's entry changed after this one, or -1.
        var newer: Int32
        /// The position of the row's last change.
        var position: UInt64
    }

    private var entries: [Entry] = []
    /// (user, row) → index in `entries`.
    private var slots: [UInt64: Int32] = [:]
    /// Per user, their entry changed last, or -1.
    private var newest: [Int32] = []

    init() {}

    /// Makes room for one more user (the next index).
    mutating func addUser() { newest.append(-1) }

    /// The number of rows tracked, all users together.
    var count: Int { entries.count }

    private static func slot(_ user: Int32, _ row: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: user)) << 32 | UInt64(UInt32(bitPattern: row))
    }

    /// Records that `user`'s `row` changed at `position`, which is at or after every position recorded before (the
    /// fold's order).
    mutating func touch(_ user: Int32, _ row: Int32, at position: UInt64) {
        touch(entry: entry(user, row), of: user, at: position)
    }

    /// The entry of `user`'s `row`, made (at the head of their list, with position 0) when the row has none: touch it
    /// before anything else is touched for the user.
    mutating func entry(_ user: Int32, _ row: Int32) -> Int32 {
        if let index = slots[Self.slot(user, row)] { return index }
        let index = Int32(entries.count)
        let head = newest[Int(user)]
        entries.append(Entry(row: row, older: head, newer: -1, position: 0))
        if head >= 0 { entries[Int(head)].newer = index }
        newest[Int(user)] = index
        slots[Self.slot(user, row)] = index
        return index
    }

    /// ``touch(_:_:at:)`` for the row whose entry is `index` (from ``entry(_:_:)``), of `user`.
    mutating func touch(entry index: Int32, of user: Int32, at position: UInt64) {
        let i = Int(index)
        entries[i].position = position
        let head = newest[Int(user)]
        guard head != index else { return }
        // Out of its place (it has a newer entry, since it is not the head), then in at the head.
        let (older, newer) = (entries[i].older, entries[i].newer)
        if older >= 0 { entries[Int(older)].newer = newer }
        entries[Int(newer)].older = older
        entries[i].older = head
        entries[i].newer = -1
        entries[Int(head)].newer = index
        newest[Int(user)] = index
    }

    /// The entry of `user`'s `row`, or nil when the row never changed.
    func peekEntry(_ user: Int32, _ row: Int32) -> Int32? { slots[Self.slot(user, row)] }

    /// `user`'s rows that changed after `position`, the last changed first, each once; every row ever tracked for
    /// them when `position` is 0. Costs the number of rows returned.
    func changed(_ user: Int32, after position: UInt64) -> [Int32] {
        var rows: [Int32] = []
        var index = newest[Int(user)]
        while index >= 0, entries[Int(index)].position > position {
            rows.append(entries[Int(index)].row)
            index = entries[Int(index)].older
        }
        return rows
    }

    /// The position of `user`'s last change to `row`, or nil when it never changed.
    func lastChange(_ user: Int32, _ row: Int32) -> UInt64? {
        slots[Self.slot(user, row)].map { entries[Int($0)].position }
    }

    // MARK: Snapshot

    /// Writes each user's rows, oldest change first, with their positions.
    func write(to writer: inout ByteWriter) {
        writer.count(newest.count)
        var list: [Entry] = []
        for head in newest {
            list.removeAll(keepingCapacity: true)
            var index = head
            while index >= 0 {
                list.append(entries[Int(index)])
                index = entries[Int(index)].older
            }
            writer.count(list.count)
            for entry in list.reversed() {
                writer.signed(Int64(entry.row))
                writer.varint(entry.position)
            }
        }
    }

    /// Reads what ``write(to:)`` wrote for `userCount` users whose rows are below `rowCount`.
    init(reading reader: inout ByteReader, userCount: Int, rowCount: Int) throws(ByteReaderError) {
        guard try reader.count() == userCount else {
            throw ByteReaderError(description: "the change index does not have one list per user")
        }
        newest = Array(repeating: -1, count: userCount)
        for user in 0..<userCount {
            var last: UInt64 = 0
            for _ in 0..<(try reader.count()) {
                let row = try reader.int32()
                let position = try reader.varint()
                guard row >= 0, Int(row) < rowCount, position >= last,
                    slots[Self.slot(Int32(user), row)] == nil
                else { throw ByteReaderError(description: "bad change index entry (row \(row), position \(position))") }
                last = position
                touch(Int32(user), row, at: position)
            }
        }
    }
}
