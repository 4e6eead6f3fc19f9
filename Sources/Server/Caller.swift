import Projections

/// Who is asking, for the generated routes (which see the request, not Hummingbird's context): set by
/// ``AuthenticationMiddleware`` around the rest of the request.
struct Caller: Sendable {
    @TaskLocal static var current = Caller(identity: nil)

    /// The verified token's subject; nil on the public routes.
    var identity: Identity?

    /// The asking user.
    /// - Throws: 401 when the request carried no valid token.
    static func user() throws(APIError) -> UserID {
        guard let identity = current.identity else { throw .unauthorized }
        return identity.user
    }

    /// The asking user, who must be an admin.
    /// - Throws: 401 without a valid token, 403 without the admin role.
    static func admin() throws(APIError) -> UserID {
        guard let identity = current.identity else { throw .unauthorized }
        guard identity.isAdmin else { throw .forbidden("this route is for admins (a token with parley_role: admin)") }
        return identity.user
    }

    static var isAdmin: Bool { current.identity?.isAdmin == true }
}
