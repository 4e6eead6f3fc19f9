import Delivery
import EventLog
import Foundation
import OpenAPIRuntime
import ParleyAPI
import Projections

extension Handlers {
    // MARK: Moderation

    func report(_ input: Operations.Report.Input) async throws -> Operations.Report.Output {
        let user = try Caller.user()
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let target: ReportTarget
        switch (b.room, b.message, b.user) {
        case (let room?, let message?, nil): target = .message(room: RoomID(room), message: MessageID(message))
        case (nil, nil, let other?): target = .user(UserID(other))
        default:
            throw APIError.badRequest(
                "invalidTarget", "report either a message (room and message) or a user (user), not both")
        }
        let report = try await engine.report(target, by: user, reason: b.reason)
        api.metrics.reportsOpened.increment()
        return .created(.init(body: .json(.init(report: report.rawValue))))
    }

    func reports(_ input: Operations.Reports.Input) async throws -> Operations.Reports.Output {
        _ = try Caller.admin()
        let state = input.query.state ?? .open
        let list = try engine.reports(open: state == .all ? nil : state == .open)
        return .ok(.init(body: .json(try list.map(Schemas.ReportView.init))))
    }

    func resolveReport(_ input: Operations.ResolveReport.Input) async throws -> Operations.ResolveReport.Output {
        let moderator = try Caller.admin()
        let report = ReportID(input.path.report)
        guard case .json(let b) = input.body else { throw APIError.unreadableBody }
        let action: ReportAction = try mapped(b.action)
        let position = try await engine.resolveReport(
            report, by: moderator, action: action, until: b.until?.milliseconds)
        api.metrics.reportsResolved.increment()
        if action == .userSuspended, let user = engine.reportedUser(of: report), engine.suspension(of: user) != nil {
            api.hub.disconnect(user: user, ending: .suspended)
        }
        return .ok(.init(body: .json(.init(position))))
    }

    func liftSuspension(_ input: Operations.LiftSuspension.Input) async throws -> Operations.LiftSuspension.Output {
        let moderator = try Caller.admin()
        let position = try await engine.liftSuspension(of: UserID(input.path.user), by: moderator)
        return .ok(.init(body: .json(.init(position))))
    }

    // MARK: The log

    func audit(_ input: Operations.Audit.Input) async throws -> Operations.Audit.Output {
        _ = try Caller.admin()
        let q = input.query
        let filter = AuditQuery(
            actor: q.actor, type: q._type, stream: q.stream, since: q.since?.milliseconds,
            until: q.until?.milliseconds, after: Position(UInt64(q.after ?? 0)),
            limit: q.limit ?? 1000)
        return .ok(.init(body: .json(try engine.audit(filter).map(Schemas.AuditEntry.init))))
    }

    func exportMine(_ input: Operations.ExportMine.Input) async throws -> Operations.ExportMine.Output {
        let user = try Caller.user()
        let store = engine.store
        // A scan of the whole log: on a thread of its own, not the pool's.
        let text = try await onDedicatedThread("parley-export") { () throws(APIError) -> String in
            var text = ""
            do {
                try store.forEachView(from: .first) { view in
                    // Who an event is by or about is in the clear: open only what is exported.
                    guard let envelope = try? EventEnvelope(record: view.record, keys: nil),
                        envelope.isByOrAbout(user)
                    else { return }
                    text += envelope.opened(with: store.keys).jsonLine() + "\n"
                }
            } catch let error as EventLogError {
                throw APIError(ValidationError(storage: error, doing: "reading the log"))
            } catch {
                throw APIError(ValidationError(.storage, "reading the log failed: \(error)"))
            }
            return text
        }
        return .ok(.init(body: .applicationXNdjson(HTTPBody(text))))
    }

    func export(_ input: Operations.Export.Input) async throws -> Operations.Export.Output {
        _ = try Caller.admin()
        let from = input.query.from ?? 1
        let limit = input.query.limit ?? 10_000
        let records: [Record]
        do throws(EventLogError) {
            records = try engine.store.read(from: Position(UInt64(from)), limit: limit)
        } catch {
            throw APIError(ValidationError(storage: error, doing: "reading the log"))
        }
        var text = ""
        for record in records {
            guard let envelope = try? EventEnvelope(record: record, keys: engine.store.keys) else {
                throw APIError(
                    .internalServerError, "undecodable", "the event at position \(record.position) does not decode")
            }
            text += envelope.jsonLine() + "\n"
        }
        // A full page names the next one.
        let next = records.count == limit ? records.last.map { $0.position.int + 1 } : nil
        return .ok(.init(headers: .init(parleyNextFrom: next), body: .applicationXNdjson(HTTPBody(text))))
    }

    func stats(_ input: Operations.Stats.Input) async throws -> Operations.Stats.Output {
        _ = try Caller.admin()
        let counts = try engine.counts()
        var stateDigest: String?
        if input.query.digest == true {
            // It encodes the whole state (0.6 s at a million events): asked for, and not on the pool.
            stateDigest = try await onDedicatedThread("parley-digest") { try engine.stateDigest }
        }
        let replication = engine.store.replication
        return .ok(
            .init(
                body: .json(
                    .init(
                        activities: counts.activities, events: Int(truncatingIfNeeded: counts.events),
                        gratitudes: counts.gratitudes,
                        head: engine.store.head.int, headDigest: engine.store.headDigest,
                        liveConnections: api.hub.connectionCount, messages: counts.messages,
                        replication: try replication.map {
                            .init(
                                lag: Int(truncatingIfNeeded: $0.lag), node: $0.node, role: try mapped($0.role),
                                term: Int(truncatingIfNeeded: $0.term), writer: $0.writer,
                                writerAddress: $0.writerAddress)
                        },
                        rooms: counts.rooms, stateDigest: stateDigest, users: counts.users,
                        writes: replication.map { $0.role == "writer" } ?? !engine.isFollowing))))
    }

    func verify(_ input: Operations.Verify.Input) async throws -> Operations.Verify.Output {
        _ = try Caller.admin()
        let store = engine.store
        let report: VerificationReport
        do throws(EventLogError) {
            // Reads every batch: on a thread of its own, not one of the pool's.
            report = try await onDedicatedThread("parley-verify") { () throws(EventLogError) in try store.verify() }
        } catch {
            throw APIError(ValidationError(storage: error, doing: "verifying the log"))
        }
        return .ok(
            .init(
                body: .json(
                    .init(
                        batches: report.batches, headDigest: report.headDigest, ok: report.isOK,
                        problems: report.problems.map { "\($0)" }, records: Int(truncatingIfNeeded: report.records),
                        segments: report.segments))))
    }

    // MARK: Durable subscriptions

    func subscriptions(_ input: Operations.Subscriptions.Input) async throws -> Operations.Subscriptions.Output {
        _ = try Caller.admin()
        let list = (api.deliveries?.subscriptions ?? []).map { Schemas.SubscriptionStatus($0.status) }
        return .ok(.init(body: .json(list)))
    }

    func retrySubscription(_ input: Operations.RetrySubscription.Input) async throws
        -> Operations.RetrySubscription.Output
    {
        _ = try Caller.admin()
        let name = input.path.name
        guard let subscription = api.deliveries?.subscription(named: name) else {
            throw APIError.notFound("no subscription \(name)")
        }
        do throws(DeliveryError) {
            try subscription.retryParked()
        } catch {
            throw APIError(.conflict, error.code.name, error.message)
        }
        return .ok(.init(body: .json(.init(subscription.status))))
    }
}
