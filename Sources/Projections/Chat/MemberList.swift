/// A room's members: the first two stored inline, the rest in an array.
///
/// Direct rooms (most rooms) then keep their members in the room record itself, so folding a message
/// touches one cache line group instead of the room record plus a separate array buffer (measured: the
/// array's header load was about half of the fold's time in `MessageSent`).
struct MemberList: RandomAccessCollection, MutableCollection, Equatable {
    private var first = Member(user: -1, readMarker: 0, unread: 0)
    private var second = Member(user: -1, readMarker: 0, unread: 0)
    private var rest: [Member] = []
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Member {
        get {
            switch position {
            case 0: return first
            case 1: return second
            default: return rest[position - 2]
            }
        }
        set {
            switch position {
            case 0: first = newValue
            case 1: second = newValue
            default: rest[position - 2] = newValue
            }
        }
    }

    mutating func append(_ member: Member) {
        switch count {
        case 0: first = member
        case 1: second = member
        default: rest.append(member)
        }
        count += 1
    }

    /// Removes the member at `index`, keeping the others in order.
    mutating func remove(at index: Int) {
        precondition(index >= 0 && index < count, "member index out of range")
        var index = index
        while index + 1 < count {
            self[index] = self[index + 1]
            index += 1
        }
        if count > 2 { rest.removeLast() }
        count -= 1
    }

    static func == (lhs: MemberList, rhs: MemberList) -> Bool { lhs.elementsEqual(rhs) }
}
