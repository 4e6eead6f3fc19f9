/// A user's account and profile (`profile(user)`).
public struct Profile: Sendable, Hashable, Encodable {
    /// The user.
    public var user: UserID
    /// How the user signed up.
    public var method: RegistrationMethod
    /// E.164 phone number, if any.
    public var phone: String?
    /// Email address, if any.
    public var email: String?
    /// The name.
    public var name: String?
    /// The nickname, if any.
    public var nickname: String?
    /// Photo URL, if any.
    public var photoURL: String?
    /// About text, if any.
    public var about: String?
    /// Where the user lives, if said.
    public var location: Location?
    /// Interests.
    public var interests: [String]
    /// Dogs (WagChat).
    public var dogs: [Dog]
    /// Sign-up time, milliseconds since the epoch.
    public var registeredAt: Int64

    enum CodingKeys: String, CodingKey {
        case user, method, phone, email, name, nickname, photoURL, about, location, interests, dogs, registeredAt
    }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user, forKey: .user)
        try c.encode(method, forKey: .method)
        try c.encode(phone, forKey: .phone)
        try c.encode(email, forKey: .email)
        try c.encode(name, forKey: .name)
        try c.encode(nickname, forKey: .nickname)
        try c.encode(photoURL, forKey: .photoURL)
        try c.encode(about, forKey: .about)
        try c.encode(location, forKey: .location)
        try c.encode(interests, forKey: .interests)
        try c.encode(dogs, forKey: .dogs)
        try c.encode(Timestamp.format(registeredAt), forKey: .registeredAt)
    }
}

extension ProjectionState {
    func profile(_ id: UserID) -> Profile? {
        guard let u = registeredUser(id) else { return nil }
        let r = accounts.users[Int(u)]
        return Profile(
            user: id, method: r.method, phone: r.phone, email: r.email, name: r.name, nickname: r.nickname,
            photoURL: r.photoURL, about: r.about, location: r.location, interests: r.interests, dogs: r.dogs,
            registeredAt: r.registeredAt)
    }

    func user(phone: String) -> UserID? { accounts.byPhone[phone].map { UserID(users[$0]) } }

    func user(email: String) -> UserID? {
        accounts.byEmail[AccountsProjection.normalizedEmail(email)].map { UserID(users[$0]) }
    }
}
