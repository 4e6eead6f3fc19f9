/// A user signed up. Actor: the user. Stream: `user:<user>`.
public struct UserRegistered: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "UserRegistered"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 0
    /// The payload schema version this build writes.
    public static let schemaVersion: UInt8 = 1
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
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    enum CodingKeys: String, CodingKey { case user, method, phone, email, name }

    /// Makes a value from its fields.
    public init(
        user: UserID, method: RegistrationMethod, phone: String? = nil, email: String? = nil, name: String? = nil
    ) {
        self.user = user
        self.method = method
        self.phone = phone
        self.email = email
        self.name = name
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .userRegistered(self) }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.rawEnum(method)
        writer.optionalString(phone)
        writer.optionalString(email)
        writer.optionalString(name)
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        method = try reader.rawEnum(RegistrationMethod.self)
        phone = try reader.optionalString()
        email = try reader.optionalString()
        name = try reader.optionalString()
    }
}

/// Where a user lives, as far as they said.
public struct Location: Sendable, Hashable, Codable {
    /// City, if given.
    public var city: String?
    /// Latitude, if given.
    public var lat: Double?
    /// Longitude, if given.
    public var lon: Double?
    /// Makes a value from its fields.
    public init(city: String? = nil, lat: Double? = nil, lon: Double? = nil) {
        self.city = city
        self.lat = lat
        self.lon = lon
    }
}

/// One of a WagChat user's dogs.
public struct Dog: Sendable, Hashable, Codable {
    /// The name.
    public var name: String
    /// Breed, if given.
    public var breed: String?
    /// Age in years, if given.
    public var ageYears: Int?
    /// Makes a value from its fields.
    public init(name: String, breed: String? = nil, ageYears: Int? = nil) {
        self.name = name
        self.breed = breed
        self.ageYears = ageYears
    }
}

/// A profile patch: a field that is present is set, an absent one is kept. Actor: the user.
public struct ProfileUpdated: CatalogueEvent {
    /// The event type name in the log.
    public static let typeName = "ProfileUpdated"
    /// The event type's stable code, its place in ``DomainEvent/eventTypes``.
    public static let code = 1
    /// The newest payload schema version this build writes: 2 when the patch clears fields (their codes follow
    /// the version 1 fields), else 1, so a patch that clears nothing has the bytes it always had.
    public static let schemaVersion: UInt8 = 2
    /// The user.
    public var user: UserID
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
    public var interests: [String]?
    /// Dogs (WagChat).
    public var dogs: [Dog]?
    /// Fields the patch clears (back to no value, or an empty list); a field both set and cleared is set.
    public var cleared: Set<ProfileField>
    /// The seal holding the personal fields while they are not opened (docs/ERASURE.md); nil in the clear.
    var sealed: [UInt8]? = nil

    /// Makes a value from its fields.
    public init(
        user: UserID, name: String? = nil, nickname: String? = nil, photoURL: String? = nil, about: String? = nil,
        location: Location? = nil, interests: [String]? = nil, dogs: [Dog]? = nil, cleared: Set<ProfileField> = []
    ) {
        self.user = user
        self.name = name
        self.nickname = nickname
        self.photoURL = photoURL
        self.about = about
        self.location = location
        self.interests = interests
        self.dogs = dogs
        self.cleared = cleared
    }

    /// The stream: `user:<user>`.
    public var stream: String { "user:\(user.rawValue)" }
    /// The actor named by the payload: the user.
    public var payloadActor: String? { user.rawValue }
    /// This payload as a ``DomainEvent``.
    public var event: DomainEvent { .profileUpdated(self) }

    /// Version 1 bytes when nothing is cleared; else version 2: the same fields, then the count and codes of the
    /// cleared fields in code order.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 48)
        writer.byte(cleared.isEmpty ? 1 : 2)
        write(to: &writer)
        return writer.bytes
    }

    func write(to writer: inout ByteWriter) {
        writer.string(user.rawValue)
        writer.optionalString(name)
        writer.optionalString(nickname)
        writer.optionalString(photoURL)
        writer.optionalString(about)
        writer.bool(location != nil)
        if let location {
            writer.optionalString(location.city)
            writer.optionalDouble(location.lat)
            writer.optionalDouble(location.lon)
        }
        writer.bool(interests != nil)
        if let interests { writer.strings(interests) }
        writer.bool(dogs != nil)
        if let dogs {
            writer.count(dogs.count)
            for dog in dogs {
                writer.string(dog.name)
                writer.optionalString(dog.breed)
                writer.optionalSigned(dog.ageYears.map(Int64.init))
            }
        }
        guard !cleared.isEmpty else { return }
        let codes = cleared.map(\.storedCode).sorted()
        writer.count(codes.count)
        for code in codes { writer.byte(code) }
    }

    init(reading reader: inout ByteReader, version: UInt8) throws(ByteReaderError) {
        user = UserID(try reader.string())
        name = try reader.optionalString()
        nickname = try reader.optionalString()
        photoURL = try reader.optionalString()
        about = try reader.optionalString()
        location = nil
        if try reader.bool() {
            location = Location(
                city: try reader.optionalString(), lat: try reader.optionalDouble(), lon: try reader.optionalDouble())
        }
        interests = try reader.bool() ? try reader.strings() : nil
        dogs = nil
        if try reader.bool() {
            let n = try reader.count()
            var list: [Dog] = []
            for _ in 0..<n {
                list.append(
                    Dog(
                        name: try reader.string(), breed: try reader.optionalString(),
                        ageYears: try reader.optionalSigned().map { Int($0) }))
            }
            dogs = list
        }
        cleared = []
        guard version >= 2 else { return }
        for _ in 0..<(try reader.count()) { cleared.insert(try reader.rawEnum(ProfileField.self)) }
    }

    enum CodingKeys: String, CodingKey {
        case user, name, nickname, photoURL, about, location, interests, dogs, cleared
    }

    /// The JSON form: the fields set, and `cleared` (field names) only when the patch clears any.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        user = try c.decode(UserID.self, forKey: .user)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        nickname = try c.decodeIfPresent(String.self, forKey: .nickname)
        photoURL = try c.decodeIfPresent(String.self, forKey: .photoURL)
        about = try c.decodeIfPresent(String.self, forKey: .about)
        location = try c.decodeIfPresent(Location.self, forKey: .location)
        interests = try c.decodeIfPresent([String].self, forKey: .interests)
        dogs = try c.decodeIfPresent([Dog].self, forKey: .dogs)
        cleared = Set(try c.decodeIfPresent([ProfileField].self, forKey: .cleared) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(user, forKey: .user)
        try c.encodeIfPresent(name, forKey: .name)
        try c.encodeIfPresent(nickname, forKey: .nickname)
        try c.encodeIfPresent(photoURL, forKey: .photoURL)
        try c.encodeIfPresent(about, forKey: .about)
        try c.encodeIfPresent(location, forKey: .location)
        try c.encodeIfPresent(interests, forKey: .interests)
        try c.encodeIfPresent(dogs, forKey: .dogs)
        if !cleared.isEmpty {
            try c.encode(cleared.sorted { $0.storedCode < $1.storedCode }, forKey: .cleared)
        }
    }
}

/// A profile field a ``ProfileUpdated`` can clear.
public enum ProfileField: String, Sendable, Hashable, Codable, CaseIterable {
    case name, nickname, photoURL, about, location, interests, dogs
}

extension ProfileField: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .name: 0
        case .nickname: 1
        case .photoURL: 2
        case .about: 3
        case .location: 4
        case .interests: 5
        case .dogs: 6
        }
    }
}

/// How a user signed up.
public enum RegistrationMethod: String, Sendable, Hashable, Codable, CaseIterable {
    case phone, email, google, `import`
}

extension RegistrationMethod: StoredEnum {
    var storedCode: UInt8 {
        switch self {
        case .phone: 0
        case .email: 1
        case .google: 2
        case .import: 3
        }
    }
}
