/// A change to one's profile (`PATCH /v1/me/profile`): a field given is set, a field in ``cleared`` is cleared
/// (sent as `null`; an empty list for interests and dogs), and any other is kept.
///
/// Written by hand and named in the generator's `typeOverrides`: a generated struct reads a field given as `null`
/// and a field left out as the same `nil`, and the difference is the point of this body.
public struct ProfilePatch: Codable, Hashable, Sendable {
    public enum Field: String, CaseIterable, Codable, Hashable, Sendable {
        case name, nickname, photoURL, about, location, interests, dogs
    }

    public var name: String?
    public var nickname: String?
    public var photoURL: String?
    public var about: String?
    public var location: Components.Schemas.Location?
    public var interests: [String]?
    public var dogs: [Components.Schemas.Dog]?
    /// The fields to clear; a field both given and cleared is cleared.
    public var cleared: Set<Field>

    public init(
        name: String? = nil, nickname: String? = nil, photoURL: String? = nil, about: String? = nil,
        location: Components.Schemas.Location? = nil, interests: [String]? = nil,
        dogs: [Components.Schemas.Dog]? = nil, cleared: Set<Field> = []
    ) {
        self.name = name
        self.nickname = nickname
        self.photoURL = photoURL
        self.about = about
        self.location = location
        self.interests = interests
        self.dogs = dogs
        self.cleared = cleared
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ field: Field) { stringValue = field.rawValue }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        name = try c.decodeIfPresent(String.self, forKey: Key(.name))
        nickname = try c.decodeIfPresent(String.self, forKey: Key(.nickname))
        photoURL = try c.decodeIfPresent(String.self, forKey: Key(.photoURL))
        about = try c.decodeIfPresent(String.self, forKey: Key(.about))
        location = try c.decodeIfPresent(Components.Schemas.Location.self, forKey: Key(.location))
        interests = try c.decodeIfPresent([String].self, forKey: Key(.interests))
        dogs = try c.decodeIfPresent([Components.Schemas.Dog].self, forKey: Key(.dogs))
        cleared = []
        for field in Field.allCases where c.contains(Key(field)) {
            if try c.decodeNil(forKey: Key(field)) { cleared.insert(field) }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        func put(_ value: (some Encodable)?, _ field: Field) throws {
            if cleared.contains(field) {
                try c.encodeNil(forKey: Key(field))
            } else {
                try c.encodeIfPresent(value, forKey: Key(field))
            }
        }
        try put(name, .name)
        try put(nickname, .nickname)
        try put(photoURL, .photoURL)
        try put(about, .about)
        try put(location, .location)
        try put(interests, .interests)
        try put(dogs, .dogs)
    }
}
