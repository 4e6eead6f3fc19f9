import EventLog

/// One user's account and profile as the projections hold it.
struct UserRecord: Equatable {
    var isRegistered = false
    /// Erased (``UserErased``): not registered, never again; every personal field empty.
    var isErased = false
    var method: RegistrationMethod = .import
    var phone: String?
    var email: String?
    var name: String?
    var nickname: String?
    var photoURL: String?
    var about: String?
    var location: Location?
    var interests: [String] = []
    var dogs: [Dog] = []
    var registeredAt: Int64 = 0
}

/// Accounts, profiles and the directory (phone → user, email → user).
///
/// Folds: `UserRegistered`, `ProfileUpdated`.
struct AccountsProjection {
    var users: [UserRecord] = []
    /// Derived from `users` (rebuilt on snapshot load).
    var byPhone: [String: Int32] = [:]
    var byEmail: [String: Int32] = [:]

    mutating func addUser() { users.append(UserRecord()) }

    mutating func fold(_ event: UserRegistered, user: Int32, time: Int64) {
        var record = users[Int(user)]
        guard !record.isRegistered, !record.isErased else { return }
        record.isRegistered = true
        record.method = event.method
        record.phone = event.phone
        record.email = event.email
        record.name = event.name
        record.registeredAt = time
        users[Int(user)] = record
        if let phone = event.phone { byPhone[phone] = user }
        if let email = event.email { byEmail[Self.normalizedEmail(email)] = user }
    }

    mutating func fold(_ event: ProfileUpdated, user: Int32) {
        let i = Int(user)
        for field in event.cleared {
            switch field {
            case .name: users[i].name = nil
            case .nickname: users[i].nickname = nil
            case .photoURL: users[i].photoURL = nil
            case .about: users[i].about = nil
            case .location: users[i].location = nil
            case .interests: users[i].interests = []
            case .dogs: users[i].dogs = []
            }
        }
        if let name = event.name { users[i].name = name }
        if let nickname = event.nickname { users[i].nickname = nickname }
        if let photoURL = event.photoURL { users[i].photoURL = photoURL }
        if let about = event.about { users[i].about = about }
        if let location = event.location { users[i].location = location }
        if let interests = event.interests { users[i].interests = interests }
        if let dogs = event.dogs { users[i].dogs = dogs }
    }

    static func normalizedEmail(_ email: String) -> String { email.lowercased() }

    func isRegistered(_ user: Int32?) -> Bool {
        guard let user else { return false }
        return users[Int(user)].isRegistered
    }

    // MARK: Snapshot

    /// Writes the accounts; each user's personal fields through ``ByteWriter/personal(_:owner:_:)`` (sealed
    /// under their key when `keys` is given).
    func write(to writer: inout ByteWriter, keys: PersonalKeys?, ids: Interner) {
        writer.count(users.count)
        for (index, user) in users.enumerated() {
            writer.byte((user.isRegistered ? 1 : 0) | (user.isErased ? 2 : 0))
            writer.rawEnum(user.method)
            writer.personal(keys, owner: ids[Int32(index)]) { writer in
                writer.optionalString(user.phone)
                writer.optionalString(user.email)
                writer.optionalString(user.name)
                writer.optionalString(user.nickname)
                writer.optionalString(user.photoURL)
                writer.optionalString(user.about)
                writer.bool(user.location != nil)
                if let location = user.location {
                    writer.optionalString(location.city)
                    writer.optionalDouble(location.lat)
                    writer.optionalDouble(location.lon)
                }
                writer.strings(user.interests)
                writer.count(user.dogs.count)
                for dog in user.dogs {
                    writer.string(dog.name)
                    writer.optionalString(dog.breed)
                    writer.optionalSigned(dog.ageYears.map(Int64.init))
                }
            }
            writer.signed(user.registeredAt)
        }
    }

    init() {}

    init(reading reader: inout ByteReader, keys: PersonalKeys?, ids: Interner) throws(ByteReaderError) {
        let n = try reader.count()
        guard n <= ids.count else { throw ByteReaderError(description: "\(n) accounts for \(ids.count) users") }
        users.reserveCapacity(n)
        for index in 0..<n {
            var user = UserRecord()
            let flags = try reader.byte()
            user.isRegistered = flags & 1 != 0
            user.isErased = flags & 2 != 0
            user.method = try reader.rawEnum(RegistrationMethod.self)
            try reader.personal(keys, owner: ids[Int32(index)]) { (reader: inout ByteReader) throws(ByteReaderError) in
                user.phone = try reader.optionalString()
                user.email = try reader.optionalString()
                user.name = try reader.optionalString()
                user.nickname = try reader.optionalString()
                user.photoURL = try reader.optionalString()
                user.about = try reader.optionalString()
                if try reader.bool() {
                    user.location = Location(
                        city: try reader.optionalString(), lat: try reader.optionalDouble(),
                        lon: try reader.optionalDouble())
                }
                user.interests = try reader.strings()
                let dogs = try reader.count()
                for _ in 0..<dogs {
                    user.dogs.append(
                        Dog(
                            name: try reader.string(), breed: try reader.optionalString(),
                            ageYears: try reader.optionalSigned().map { Int($0) }))
                }
            }
            user.registeredAt = try reader.signed()
            users.append(user)
            if user.isRegistered {
                if let phone = user.phone { byPhone[phone] = Int32(index) }
                if let email = user.email { byEmail[Self.normalizedEmail(email)] = Int32(index) }
            }
        }
    }
}
