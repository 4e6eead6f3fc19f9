import EventLog
import HTTPTypes
import Projections

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
}

extension API {
    /// Erases `user` (``Engine/erase(_:actor:time:)``), then ends their live connections and forgets their
    /// idempotent answers. (``ContractMiddleware`` refused the command if the server is stopping.)
    func erase(_ user: UserID, actor: String) async throws(APIError) -> Position {
        do throws(ValidationError) {
            let position = try await engine.erase(user, actor: actor)
            hub.disconnect(user: user, ending: .erased)
            idempotency.forget(user: user)
            return position
        } catch {
            throw APIError(error)
        }
    }

    /// Refuses texts that hold a term of the word filter (400 `contentFiltered`); nil ones pass.
    func screen(_ texts: [String?]) throws(APIError) {
        let filter = configuration.wordFilter
        if filter.isEmpty { return }
        for case let text? in texts where filter.matches(text) { throw .contentFiltered }
    }
}

enum ActivityScope {
    /// The activity, which `user` must host or be invited to: 404 otherwise.
    @discardableResult
    static func require(_ user: UserID, in activity: ActivityID, _ engine: Engine) throws(APIError) -> ActivityView {
        let view: ActivityView?
        do throws(ValidationError) {
            view = try engine.activity(activity)
        } catch {
            throw APIError(error)
        }
        guard let view, view.host == user || view.guests.contains(where: { $0.user == user }) else {
            throw .notFound("no activity \(activity) among yours")
        }
        return view
    }
}
