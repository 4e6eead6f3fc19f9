/// One gratitude in a history.
public struct GratitudeView: Sendable, Hashable, Encodable {
    /// The gratitude id.
    public var gratitude: GratitudeID
    /// Who is thanked.
    public var recipient: String
    /// The feeling id.
    public var feeling: FeelingID
    /// The text, if any.
    public var body: String
    /// Milliseconds since the epoch (ISO 8601 in JSON).
    public var time: Int64

    enum CodingKeys: String, CodingKey { case gratitude, recipient, feeling, body, time }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(gratitude, forKey: .gratitude)
        try c.encode(recipient, forKey: .recipient)
        try c.encode(feeling, forKey: .feeling)
        try c.encode(body, forKey: .body)
        try c.encode(Timestamp.format(time), forKey: .time)
    }
}

/// A feeling a gratitude can be tagged with (`feelings()`).
public struct FeelingView: Sendable, Hashable, Encodable {
    /// The feeling id, as a gratitude names it.
    public var feeling: FeelingID
    /// The name shown.
    public var name: String
    /// The emoji shown.
    public var emoji: String

    enum CodingKeys: String, CodingKey { case feeling, name, emoji }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(feeling, forKey: .feeling)
        try c.encode(name, forKey: .name)
        try c.encode(emoji, forKey: .emoji)
    }
}

/// A user's gratitude: total, count per feeling id, history newest first (`gratitude(user)`).
public struct GratitudeSummary: Sendable, Hashable, Encodable {
    /// How many.
    public var total: Int
    /// Count per feeling id.
    public var byFeeling: [String: Int]
    /// Newest first.
    public var history: [GratitudeView]
}

extension ProjectionState {
    /// Every defined feeling, sorted by id.
    func feelingList() -> [FeelingView] {
        gratitude.feelings.sorted { $0.key < $1.key }.map {
            FeelingView(feeling: $0.key, name: $0.value.name, emoji: $0.value.emoji)
        }
    }

    func gratitudeSummary(_ user: UserID) -> GratitudeSummary {
        guard let u = users.index(of: user.rawValue) else {
            return GratitudeSummary(total: 0, byFeeling: [:], history: [])
        }
        let list = gratitude.byAuthor[Int(u)]
        var byFeeling: [String: Int] = [:]
        for entry in list { byFeeling[entry.feeling, default: 0] += 1 }
        let history = list.reversed().map {
            GratitudeView(
                gratitude: GratitudeID($0.id), recipient: $0.recipient, feeling: FeelingID($0.feeling), body: $0.body,
                time: $0.time)
        }
        return GratitudeSummary(total: list.count, byFeeling: byFeeling, history: history)
    }
}
