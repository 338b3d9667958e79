import HTTPTypes
import Hummingbird

/// Answers errors in the caller's dialect (OpenAI's schema under /v1, Ollama's under /api)
/// and counts every request.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let metrics: ServerMetrics
    let replica: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let started = clock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            response = Self.response(ServerError.notFound("There is no route \(request.method) \(request.uri.path)."), path: request.uri.path)
        } catch let error as HTTPError where error.status == .methodNotAllowed {
            response = Self.response(ServerError(status: .methodNotAllowed, message: "\(request.uri.path) does not take \(request.method).",
                                                 type: "invalid_request_error"), path: request.uri.path)
        } catch {
            response = Self.response(ServerError.from(error), path: request.uri.path)
        }
        metrics.request(route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: response.status.code,
                        seconds: (clock.now - started) / .seconds(1))
        var named = response
        named.headers[Self.replicaHeader] = replica
        return named
    }

    static let replicaHeader = HTTPField.Name("X-Hearth-Replica")!

    static func response(_ error: ServerError, path: String) -> Response {
        var headers = HTTPFields()
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body: Response?
        if path.hasPrefix("/api/") {
            body = try? JSONBody.response(OllamaErrorBody(error: error.message), status: error.status, headers: headers)
        } else {
            body = try? JSONBody.response(OpenAIErrorBody(error), status: error.status, headers: headers)
        }
        return body ?? Response(status: error.status)
    }
}
