import Projections

/// A service that takes push notifications to devices of some platforms: APNs (``APNsProvider``), FCM
/// (``FCMProvider``), or the operator's own gateway (``PushGateway``). ``PushSink`` routes each notification to one.
public protocol PushProvider: AnyObject, Sendable {
    /// The provider's name in logs and errors (`APNs`, `FCM`, `push gateway`).
    var name: String { get }

    /// Sends `notification` once (renewing the provider's credentials and trying again at most once when it says
    /// they expired) and says what came of it.
    /// - Throws: ``DeliveryError/Code/unreachable`` when the provider did not answer, or another ``DeliveryError``
    ///   the delivery fails with (and is tried again).
    func send(_ notification: PushNotification) async throws(DeliveryError) -> PushOutcome

    /// Releases what the provider holds (an HTTP client), once nothing is sent.
    func shutdown() async
}

/// What a provider made of one notification.
public enum PushOutcome: Sendable, Hashable {
    /// Accepted: done.
    case delivered
    /// The provider says the device's token is gone (unregistered, invalid, not for this app): the device is removed
    /// and the notification counts as done.
    case deviceGone(reason: String)
    /// Refused for a reason that trying again will not change (a payload it cannot take): logged, and counted as
    /// done, so that one bad notification never holds the subscription back.
    case dropped(reason: String)
    /// Refused for now (throttled, unavailable, failing): the delivery fails and is tried again, not before
    /// `after` when the provider said when.
    case retry(after: Duration?, reason: String)
}
