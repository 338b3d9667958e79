import Foundation
import HearthCore

/// The Hugging Face Hub's API: search, model information and file lists. Requests that fail for
/// a passing reason (429, 5xx, a dropped connection) are retried; the rest become `HearthError`s
/// that say what to do.
///
/// ```swift
/// let hub = HubClient()
/// for model in try await hub.search("smollm", filter: "gguf", sort: .downloads, limit: 5) { print(model.id) }
/// ```
public struct HubClient: Sendable {
    /// Orders for search results.
    public enum SortOrder: String, Sendable, CaseIterable {
        case downloads, likes, lastModified, trending = "trending_score", created = "createdAt"
    }

    /// Endpoint, token, offline mode and cache location.
    public var environment: HubEnvironment
    /// How failed requests are retried.
    public var retry: RetryPolicy
    /// Longest silence from the server before a request is abandoned (and retried).
    public var readTimeout: Duration

    /// A client with settings from the process environment unless given.
    public init(environment: HubEnvironment = HubEnvironment(), retry: RetryPolicy = RetryPolicy(), readTimeout: Duration = .seconds(30)) {
        self.environment = environment
        self.retry = retry
        self.readTimeout = readTimeout
    }

    var http: HubHTTP { HubHTTP(readTimeout: readTimeout, token: environment.token, endpoint: environment.endpoint) }

    /// Models whose names contain `query`, most downloaded first by default; `filter` is a tag
    /// such as `gguf` or `text-generation`.
    public func search(_ query: String, filter: String? = nil, sort: SortOrder = .downloads, limit: Int = 20) async throws -> [HubModelSummary] {
        try requireOnline("Hub search results")
        var components = URLComponents(url: environment.endpoint.appendingPathComponent("api/models"), resolvingAgainstBaseURL: false)!
        var items = [URLQueryItem(name: "search", value: query), URLQueryItem(name: "sort", value: sort.rawValue),
                     URLQueryItem(name: "direction", value: "-1"), URLQueryItem(name: "limit", value: String(max(1, limit)))]
        if let filter { items.append(URLQueryItem(name: "filter", value: filter)) }
        components.queryItems = items
        let (_, data) = try await retry.run { try await http.getData(components.url!, repo: query) }
        guard let list = try HubJSON.object(data) as? [[String: Any]] else {
            throw HearthError.hubInvalidResponse("the model list is not a list")
        }
        return list.compactMap(HubJSON.summary)
    }

    /// A model at `revision` (branch, tag or commit) with every file, its size and LFS sha256.
    public func modelInfo(_ repo: String, revision: String = "main") async throws -> HubModelInfo {
        try requireOnline(repo)
        var url = environment.endpoint.appendingPathComponent("api/models")
        url = URL(string: url.absoluteString + "/" + repo + "/revision/" + Self.escapeSegment(revision) + "?blobs=true")!
        let (_, data) = try await retry.run { try await http.getData(url, repo: repo, revision: revision) }
        guard let json = try HubJSON.object(data) as? [String: Any] else {
            throw HearthError.hubInvalidResponse("model information is not an object")
        }
        return try HubJSON.modelInfo(json)
    }

    /// The files of `repo` at `revision` from the tree API, every folder included, following
    /// its pages.
    public func listFiles(_ repo: String, revision: String = "main") async throws -> [HubFile] {
        try requireOnline(repo)
        var next: URL? = URL(string: environment.endpoint.absoluteString + "/api/models/" + repo + "/tree/"
                             + Self.escapeSegment(revision) + "?recursive=true&expand=false")!
        var files: [HubFile] = []
        while let url = next {
            let (head, data) = try await retry.run { try await http.getData(url, repo: repo, revision: revision) }
            guard let list = try HubJSON.object(data) as? [[String: Any]] else {
                throw HearthError.hubInvalidResponse("the file tree is not a list")
            }
            files += list.compactMap(HubJSON.treeEntry)
            next = Self.nextPage(head.header("Link"), relativeTo: url)
        }
        return files
    }

    /// Bytes to download for the files of `repo` that match `patterns` (fnmatch globs; none
    /// means all files).
    public func downloadSize(_ repo: String, revision: String = "main", patterns: [String] = []) async throws -> Int {
        try await modelInfo(repo, revision: revision).downloadSize(patterns: patterns)
    }

    /// The URL that serves `path` of `repo` at `revision`.
    public func resolveURL(_ repo: String, revision: String, path: String) -> URL {
        let escapedPath = path.split(separator: "/", omittingEmptySubsequences: false).map { Self.escapeSegment(String($0)) }.joined(separator: "/")
        return URL(string: environment.endpoint.absoluteString + "/" + repo + "/resolve/" + Self.escapeSegment(revision) + "/" + escapedPath)!
    }

    func requireOnline(_ what: String) throws {
        if environment.offline { throw HearthError.offlineNotCached(name: what) }
    }

    /// Percent-escapes everything but unreserved characters, as Python's `quote(s, safe="")`.
    static func escapeSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The `rel="next"` URL of a Link header.
    static func nextPage(_ link: String?, relativeTo url: URL) -> URL? {
        guard let link else { return nil }
        for part in link.split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard pieces.count >= 2, pieces.dropFirst().contains(where: { $0.replacingOccurrences(of: "\"", with: "") == "rel=next" }),
                  pieces[0].hasPrefix("<"), pieces[0].hasSuffix(">") else { continue }
            return URL(string: String(pieces[0].dropFirst().dropLast()), relativeTo: url)?.absoluteURL
        }
        return nil
    }
}
