import Hummingbird
import Synchronization

/// Whether the server drains, and how many requests it is still answering (their bodies
/// included), but /health and /metrics.
final class DrainState: Sendable {
    /// Set once the server drains: new work is turned away.
    let draining = Atomic<Bool>(false)
    let requestsInProgress = Atomic<Int>(0)

    var isDraining: Bool { draining.load(ordering: .relaxed) }
}

/// Counts the requests in progress, until their bodies are written, for a drain to wait for;
/// while the server drains, turns away every request but /health and /metrics with 503, so
/// that a load balancer retries it on another replica (nginx: `proxy_next_upstream http_503`).
struct DrainMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let state: DrainState
    /// This server's name among replicas, which the 503 names.
    let replica: String

    /// Counts one request while it lives: until its response's body has been written, or the
    /// response is dropped unwritten.
    final class InProgress: Sendable {
        let state: DrainState
        init(_ state: DrainState) {
            self.state = state
            state.requestsInProgress.add(1, ordering: .relaxed)
        }
        func keep() {}
        deinit { state.requestsInProgress.subtract(1, ordering: .relaxed) }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path == "/health" || path == "/metrics" { return try await next(request, context) }
        guard !state.isDraining else {
            throw ServerError(status: .serviceUnavailable,
                              message: "This replica (\(replica)) is shutting down; send the request to another one.",
                              type: "server_error", code: "draining", retryAfter: 1)
        }
        let inProgress = InProgress(state)
        var response = try await next(request, context)
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { inProgress.keep() }
            try await body.write(writer)
        }
        return response
    }
}
