import Hummingbird

/// With a key set, turns away requests without `Authorization: Bearer KEY`, except /health
/// and the web UI's static files (which hold no data; the UI sends the key with its calls).
struct APIKeyMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let key: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let key, !Self.isPublic(request.uri.path) else { return try await next(request, context) }
        let given = request.headers[.authorization] ?? ""
        guard given.hasPrefix("Bearer "), Self.constantTimeEqual(String(given.dropFirst("Bearer ".count)), key) else {
            throw ServerError.unauthorized
        }
        return try await next(request, context)
    }

    static func isPublic(_ path: String) -> Bool {
        path == "/health" || path == "/" || path.hasPrefix("/ui/")
    }

    /// Compares without stopping at the first difference, so timing does not reveal the key.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0
    }
}
