import Hummingbird

/// Counts and times every request by method, route template and status (see ``ServerMetrics``). It is the
/// outermost middleware, so it sees the status the client gets, after ``ErrorMiddleware`` turned errors into
/// answers, and the time spent authenticating. The time ends when the route has its answer; a body written in
/// pieces (an export) may still be on its way.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = ParleyContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            metrics.recordRequest(
                method: request.method, endpoint: context.endpointPath, status: response.status.code,
                duration: ContinuousClock.now - start)
            return response
        } catch {
            // ErrorMiddleware answers every error; one that still got here is answered by the framework.
            metrics.recordRequest(
                method: request.method, endpoint: context.endpointPath,
                status: (error as? any HTTPResponseError)?.status.code ?? 500, duration: ContinuousClock.now - start)
            throw error
        }
    }
}
