import AsyncHTTPClient
import Foundation
import HearthCore
import NIOCore
import NIOHTTP1
import Synchronization

/// The status line and headers of a response, and the URL that answered after redirects.
struct ResponseHead: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let url: URL

    func header(_ name: String) -> String? { headers.first(name: name) }
}

/// HTTP for the Hub: one long-lived AsyncHTTPClient per read timeout, redirects followed here
/// rather than by the client so that the token never leaves the Hub's origin (signed storage
/// URLs carry their own authorisation), and every failure turned into a `HearthError`.
struct HubHTTP: Sendable {
    /// Longest a connection may stay silent before the request counts as failed.
    var readTimeout: Duration
    /// The token, sent only to `endpoint`'s origin.
    var token: String?
    /// The Hub's base URL.
    var endpoint: URL

    static let maximumRedirects = 10

    private static let clients = Mutex<[Int64: HTTPClient]>([:])

    /// Clients live for the whole process, as `HTTPClient.shared` does: a pull may outlive any
    /// object that would own one, and an idle client costs nothing.
    private var client: HTTPClient {
        let milliseconds = Int64(readTimeout.components.seconds * 1000 + readTimeout.components.attoseconds / 1_000_000_000_000_000)
        return Self.clients.withLock { clients in
            if let client = clients[milliseconds] { return client }
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: .seconds(15), read: .milliseconds(milliseconds)),
                decompression: .disabled
            )
            configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
            // A refused connection fails at once and goes through Hearth's own retries (and the
            // fallback to the cache) instead of the pool retrying until the connect timeout.
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[milliseconds] = client
            return client
        }
    }

    /// Sends a request and follows redirects; the body is left to the caller to stream. Statuses
    /// other than 2xx are left to the caller too.
    func send(_ method: HTTPMethod, _ url: URL, headers: [(String, String)] = [], followRedirects: Bool = true) async throws -> (ResponseHead, HTTPClientResponse.Body) {
        var current = url
        for _ in 0...Self.maximumRedirects {
            var request = HTTPClientRequest(url: current.absoluteString)
            request.method = method
            request.headers.add(name: "User-Agent", value: "hearth/0.1")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let token, Self.sameOrigin(current, endpoint) {
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
            }
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, deadline: .now() + .hours(48))
            } catch {
                throw Self.networkError(error, url: current)
            }
            let status = Int(response.status.code)
            if followRedirects, [301, 302, 303, 307, 308].contains(status), let location = response.headers.first(name: "Location") {
                guard let next = URL(string: location, relativeTo: current)?.absoluteURL,
                      next.scheme == "http" || next.scheme == "https" else {
                    throw HearthError.hubInvalidResponse("a redirect to \"\(location)\"")
                }
                _ = try? await response.body.collect(upTo: 1 << 16)
                current = next
                continue
            }
            return (ResponseHead(status: status, headers: response.headers, url: current), response.body)
        }
        throw HearthError.hubInvalidResponse("more than \(Self.maximumRedirects) redirects from \(url.absoluteString)")
    }

    /// GETs a small document and returns its bytes; statuses other than 2xx become errors.
    func getData(_ url: URL, repo: String, revision: String? = nil, file: String? = nil, limit: Int = 64 << 20) async throws -> (ResponseHead, Data) {
        let (head, body) = try await send(.GET, url, headers: [("Accept-Encoding", "identity")])
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: limit)
        } catch {
            throw Self.networkError(error, url: url)
        }
        try Self.check(head, repo: repo, revision: revision, file: file)
        return (head, Data(buffer.readableBytesView))
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ url: URL) -> Int { url.port ?? (url.scheme == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased() && port(a) == port(b)
    }

    /// Turns a failed status into the error that says what to do.
    static func check(_ head: ResponseHead, repo: String, revision: String? = nil, file: String? = nil) throws {
        guard !(200..<300).contains(head.status) else { return }
        let code = head.header("X-Error-Code")
        switch head.status {
        case 401:
            if code == "RepoNotFound" { throw HearthError.hubNotFound(repo: repo, revision: nil, file: nil) }
            throw HearthError.hubAuthenticationRequired(repo: repo)
        case 403:
            throw HearthError.hubAccessDenied(repo: repo, gated: code == "GatedRepo" || code == nil)
        case 404:
            switch code {
            case "RevisionNotFound": throw HearthError.hubNotFound(repo: repo, revision: revision ?? "?", file: nil)
            case "EntryNotFound": throw HearthError.hubNotFound(repo: repo, revision: revision, file: file ?? "?")
            case "RepoNotFound": throw HearthError.hubNotFound(repo: repo, revision: nil, file: nil)
            default: throw HearthError.hubNotFound(repo: repo, revision: file == nil ? revision : nil, file: file)
            }
        case 429:
            throw HearthError.hubRateLimited(retryAfter: retryAfterSeconds(head.header("Retry-After")))
        case 500...599:
            throw HearthError.hubServerError(status: head.status)
        default:
            throw HearthError.hubInvalidResponse("HTTP \(head.status) from \(head.url.absoluteString)")
        }
    }

    /// Retry-After as whole seconds: either a number or an HTTP date.
    static func retryAfterSeconds(_ text: String?) -> Int? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = Int(text) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, Int(date.timeIntervalSinceNow.rounded(.up)))
    }

    static func networkError(_ error: Error, url: URL) -> Error {
        if error is HearthError || error is CancellationError { return error }
        if let client = error as? HTTPClientError, client == .cancelled { return CancellationError() }
        let host = url.host.map { " (\($0)\(url.port.map { ":\($0)" } ?? ""))" } ?? ""
        return HearthError.networkFailure("\(describe(error))\(host)")
    }

    private static func describe(_ error: Error) -> String {
        if let client = error as? HTTPClientError {
            switch client {
            case .readTimeout: return "the server stopped sending data"
            case .connectTimeout: return "connecting timed out"
            case .remoteConnectionClosed: return "the server closed the connection"
            default: return String(describing: client)
            }
        }
        return String(describing: error)
    }
}
