import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

struct EmulatorFailure: Error {}

extension HubEmulator {
    func respond(_ request: Request, head: Bool) async throws -> Response {
        let rawPath = request.uri.path
        state.withLock { $0.requests.append("\(head ? "HEAD" : "GET") \(rawPath)") }
        let segments = rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .map { String($0).removingPercentEncoding ?? String($0) }
        var query: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
        let authorization = request.headers[.authorization]

        if segments.first == "api", segments.count >= 2, segments[1] == "models" {
            let rest = Array(segments.dropFirst(2))
            if rest.isEmpty || rest == [""] {
                return search(query: query)
            }
            guard rest.count >= 2 else { return error(404, code: "RepoNotFound", "Repository not found") }
            let id = "\(rest[0])/\(rest[1])"
            guard let repo = repos[id] else { return error(401, code: "RepoNotFound", "Repository not found") }
            if let denied = deny(repo, authorization: authorization) { return denied }
            if rest.count == 2 { return info(repo, revision: "main", blobs: query["blobs"] == "true") }
            if rest.count >= 4, rest[2] == "revision" {
                let revision = rest[3...].joined(separator: "/")
                guard revision == "main" || revision == repo.commit else {
                    return error(404, code: "RevisionNotFound", "Invalid rev id: \(revision)")
                }
                return info(repo, revision: revision, blobs: query["blobs"] == "true")
            }
            if rest.count >= 4, rest[2] == "tree" {
                guard rest[3] == "main" || rest[3] == repo.commit else {
                    return error(404, code: "RevisionNotFound", "Invalid rev id: \(rest[3])")
                }
                return tree(repo, cursor: Int(query["cursor"] ?? "") ?? 0, path: rawPath)
            }
            return error(404, code: nil, "Not found")
        }
        if segments.first == "cdn", segments.count == 2 {
            guard query["X-Amz-Signature"] != nil else { return error(403, code: nil, "Signature missing") }
            guard authorization == nil else { return error(400, code: nil, "Only one auth mechanism allowed") }
            for files in stored.values {
                if let file = files.values.first(where: { $0.sha256 == segments[1] && $0.file.lfs }) {
                    return try await content(file, request: request, head: head, extra: [:])
                }
            }
            return error(404, code: nil, "No such object")
        }
        if segments.count >= 5, segments[2] == "resolve" {
            let id = "\(segments[0])/\(segments[1])"
            guard let repo = repos[id] else { return error(401, code: "RepoNotFound", "Repository not found") }
            if let denied = deny(repo, authorization: authorization) { return denied }
            let revision = segments[3]
            guard revision == "main" || revision == repo.commit else {
                return error(404, code: "RevisionNotFound", "Invalid rev id: \(revision)")
            }
            let path = segments[4...].joined(separator: "/")
            guard let file = stored[id]?[path] else { return error(404, code: "EntryNotFound", "Entry not found") }
            if !head, let failure = takeFault(for: path, statusFaults: true) {
                switch failure {
                case .tooManyRequests(let retryAfter):
                    return error(429, code: nil, "Too many requests", extra: ["Retry-After": String(retryAfter)])
                default:
                    return error(503, code: nil, "Service unavailable")
                }
            }
            var headers: [String: String] = ["X-Repo-Commit": repo.commit]
            if file.file.lfs {
                headers["ETag"] = "\"\(Self.gitBlobID(of: file.pointer))\""
                headers["X-Linked-Etag"] = "\"\(file.sha256)\""
                headers["X-Linked-Size"] = String(file.size)
                headers["Location"] = signedURL(for: file)
                return Response(status: .init(code: 302), headers: fields(headers), body: ResponseBody())
            }
            return try await content(file, request: request, head: head, extra: headers)
        }
        return error(404, code: nil, "Not found")
    }

    /// A long URL like the Hub's signed storage links (they run past a kilobyte).
    func signedURL(for file: Stored) -> String {
        let signature = String(repeating: file.sha256, count: 16)
        return "http://\(storageHost):\(state.withLock { $0.port })/cdn/\(file.sha256)?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=EMULATOR%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
            + "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&response-content-disposition=attachment%3B%20filename%3D%22"
            + (file.file.path.split(separator: "/").last.map(String.init) ?? "file") + "%22&X-Amz-Signature=" + signature
    }

    static func gitBlobID(of text: String) -> String {
        var sha1 = Insecure.SHA1()
        sha1.update(data: Data("blob \(text.utf8.count)\u{0}".utf8))
        sha1.update(data: Data(text.utf8))
        return hex(sha1.finalize())
    }

    func deny(_ repo: Repo, authorization: String?) -> Response? {
        switch repo.access {
        case .open:
            return nil
        case .gated(let token):
            if authorization == nil { return error(401, code: "GatedRepo", "Access to model \(repo.id) is restricted.") }
            if authorization != "Bearer \(token)" { return error(403, code: "GatedRepo", "Access to model \(repo.id) is restricted and you are not in the authorized list.") }
            return nil
        case .privateRepo(let token):
            if authorization == nil { return error(401, code: "RepoNotFound", "Repository not found") }
            if authorization != "Bearer \(token)" { return error(404, code: "RepoNotFound", "Repository not found") }
            return nil
        }
    }

    func takeFault(for path: String, statusFaults: Bool) -> Fault? {
        state.withLock { state in
            for index in state.faults.indices where state.faults[index].remaining > 0 {
                let injected = state.faults[index]
                guard injected.path == nil || injected.path == path else { continue }
                let isStatus: Bool
                switch injected.fault {
                case .tooManyRequests, .serviceUnavailable: isStatus = true
                default: isStatus = false
                }
                guard isStatus == statusFaults else { continue }
                state.faults[index].remaining -= 1
                return injected.fault
            }
            return nil
        }
    }

    func fields(_ headers: [String: String]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let field = HTTPField.Name(name) { fields[field] = value }
        }
        return fields
    }

    func json(_ object: Any, status: Int = 200, extra: [String: String] = [:]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        var headers = extra
        headers["Content-Type"] = "application/json; charset=utf-8"
        return Response(status: .init(code: status), headers: fields(headers), body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    func error(_ status: Int, code: String?, _ message: String, extra: [String: String] = [:]) -> Response {
        var headers = extra
        if let code { headers["X-Error-Code"] = code }
        headers["X-Error-Message"] = message
        return json(["error": message], status: status, extra: headers)
    }

    func search(query: [String: String]) -> Response {
        let text = query["search"]?.lowercased() ?? ""
        let filter = query["filter"]
        let limit = query["limit"].flatMap { Int($0) } ?? 1000
        var found = repos.values.filter { repo in
            (text.isEmpty || repo.id.lowercased().contains(text)) && (filter == nil || repo.tags.contains(filter!))
        }
        switch query["sort"] {
        case "likes": found.sort { ($0.likes, $0.id) > ($1.likes, $1.id) }
        default: found.sort { ($0.downloads, $0.id) > ($1.downloads, $1.id) }
        }
        return json(found.prefix(limit).map { repo -> [String: Any] in
            var entry: [String: Any] = ["id": repo.id, "modelId": repo.id, "downloads": repo.downloads, "likes": repo.likes,
                                        "tags": repo.tags, "private": false, "createdAt": "2026-01-01T00:00:00.000Z"]
            if let tag = repo.pipelineTag { entry["pipeline_tag"] = tag }
            if repo.tags.contains("gguf") { entry["library_name"] = "gguf" }
            return entry
        })
    }

    func info(_ repo: Repo, revision: String, blobs: Bool) -> Response {
        let files = stored[repo.id] ?? [:]
        let siblings = files.values.sorted { $0.file.path < $1.file.path }.map { file -> [String: Any] in
            var sibling: [String: Any] = ["rfilename": file.file.path]
            if blobs, !repo.omitsFileMetadata {
                let size = repo.claimedSizes[file.file.path] ?? file.size
                sibling["size"] = size
                if file.file.lfs {
                    sibling["blobId"] = Self.gitBlobID(of: file.pointer)
                    sibling["lfs"] = ["sha256": file.sha256, "size": size, "pointerSize": file.pointer.utf8.count]
                } else {
                    sibling["blobId"] = file.gitSHA1
                }
            }
            return sibling
        }
        var gated: Any = false
        if case .gated = repo.access { gated = "manual" }
        var isPrivate = false
        if case .privateRepo = repo.access { isPrivate = true }
        var object: [String: Any] = [
            "_id": String(repo.commit.prefix(24)), "id": repo.id, "modelId": repo.id, "author": String(repo.id.split(separator: "/")[0]),
            "sha": repo.commit, "lastModified": "2026-01-01T00:00:00.000Z", "private": isPrivate, "disabled": false,
            "gated": gated, "downloads": repo.downloads, "likes": repo.likes, "tags": repo.tags, "siblings": siblings,
            "cardData": ["license": "apache-2.0"], "createdAt": "2026-01-01T00:00:00.000Z",
        ]
        if let tag = repo.pipelineTag { object["pipeline_tag"] = tag }
        if repo.tags.contains("gguf") { object["library_name"] = "gguf" }
        return json(object)
    }

    func tree(_ repo: Repo, cursor: Int, path: String) -> Response {
        let files = (stored[repo.id] ?? [:]).values.sorted { $0.file.path < $1.file.path }
        var folders = Set<String>()
        var entries: [[String: Any]] = []
        for file in files {
            let parts = file.file.path.split(separator: "/")
            for depth in 1..<max(1, parts.count) {
                let folder = parts[0..<depth].joined(separator: "/")
                if folders.insert(folder).inserted {
                    entries.append(["type": "directory", "oid": Self.gitBlobID(of: folder), "size": 0, "path": folder])
                }
            }
            var entry: [String: Any] = ["type": "file", "size": file.size, "path": file.file.path]
            if file.file.lfs {
                entry["oid"] = Self.gitBlobID(of: file.pointer)
                entry["lfs"] = ["oid": file.sha256, "size": file.size, "pointerSize": file.pointer.utf8.count]
            } else {
                entry["oid"] = file.gitSHA1
            }
            entries.append(entry)
        }
        let page = Array(entries.dropFirst(cursor).prefix(treePageSize))
        var headers: [String: String] = [:]
        if cursor + treePageSize < entries.count {
            headers["Link"] = "<\(endpoint.absoluteString)\(path)?recursive=true&cursor=\(cursor + treePageSize)>; rel=\"next\""
        }
        return json(page, extra: headers)
    }

    /// The bytes of a file, whole or the requested range, with whatever fault is switched on.
    func content(_ file: Stored, request: Request, head: Bool, extra: [String: String]) async throws -> Response {
        var headers = extra
        headers["Accept-Ranges"] = "bytes"
        headers["Content-Type"] = "application/octet-stream"
        headers["ETag"] = headers["ETag"] ?? "\"\(file.file.lfs ? file.sha256 : file.gitSHA1)\""
        var range = 0..<file.size
        var status = 200
        if let header = request.headers[.range] {
            guard let requested = Self.parseRange(header, size: file.size) else {
                headers["Content-Range"] = "bytes */\(file.size)"
                return Response(status: .init(code: 416), headers: fields(headers), body: ResponseBody())
            }
            range = requested
            status = 206
            if !head { state.withLock { $0.rangeStarts[file.file.path, default: []].append(requested.lowerBound) } }
            headers["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file.size)"
        }
        headers["Content-Length"] = String(range.count)
        if head {
            return Response(status: .init(code: status), headers: fields(headers), body: ResponseBody())
        }
        let fault = takeFault(for: file.file.path, statusFaults: false)
        let path = file.file.path
        let releases = state.withLock { $0.releases }
        let bodyRange = range
        let body = ResponseBody(contentLength: bodyRange.count) { writer in
            self.state.withLock { $0.sending[path, default: 0] += 1 }
            defer { self.state.withLock { $0.sending[path, default: 0] -= 1 } }
            var position = bodyRange.lowerBound
            var sent = 0
            let chunkSize: Int
            switch fault {
            case .trickle(let rate): chunkSize = max(1024, rate / 20)
            case .hold: chunkSize = 64 << 10
            default: chunkSize = 1 << 20
            }
            let reader = try ContentReader(file.file.content)
            while position < bodyRange.upperBound {
                var piece = chunkSize
                if case .hold(let limit) = fault, try await self.held(path, limit: limit, releases: releases) { piece = 4096 }
                let count = min(piece, bodyRange.upperBound - position)
                var limit = count
                if case .dropConnection(let after) = fault {
                    limit = min(count, after - sent)
                    if limit <= 0 { throw EmulatorFailure() }
                }
                var buffer = try reader.read(at: position, count: limit)
                if case .corruptBody = fault, buffer.readableBytes > 0 {
                    buffer.setInteger(buffer.getInteger(at: buffer.readerIndex, as: UInt8.self)! ^ 0xFF, at: buffer.readerIndex)
                }
                try await writer.write(buffer)
                position += limit
                sent += limit
                self.state.withLock { $0.served[path, default: 0] += limit }
                if case .trickle(let rate) = fault {
                    try await Task.sleep(for: .milliseconds(max(1, limit * 1000 / max(1, rate))))
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .init(code: status), headers: fields(headers), body: body)
    }

    /// Whether a body held past `limit` bytes of `path` is still held, after waiting up to a
    /// second for its release: then it sends a small piece, so that its client still hears
    /// from it.
    func held(_ path: String, limit: Int, releases: Int) async throws -> Bool {
        func holding() -> Bool { state.withLock { $0.served[path, default: 0] >= limit && $0.releases == releases } }
        var waits = 0
        while holding(), waits < 100 {
            try await Task.sleep(for: .milliseconds(10))
            waits += 1
        }
        return holding()
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n`, nil when it is not a single satisfiable range.
    static func parseRange(_ header: String, size: Int) -> Range<Int>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = Int(parts[1]), suffix > 0 else { return nil }
            return max(0, size - suffix)..<size
        }
        guard let start = Int(parts[0]), start < size else { return nil }
        let end = parts[1].isEmpty ? size - 1 : min(size - 1, Int(parts[1]) ?? -1)
        guard end >= start else { return nil }
        return start..<(end + 1)
    }
}

/// Reads slices of a file's content into buffers.
final class ContentReader {
    private let data: Data?
    private let descriptor: Int32

    init(_ content: HubEmulator.File.Content) throws {
        switch content {
        case .data(let data):
            self.data = data
            descriptor = -1
        case .file(let url):
            data = nil
            descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw EmulatorFailure() }
        }
    }

    func read(at offset: Int, count: Int) throws -> ByteBuffer {
        if let data {
            return ByteBuffer(bytes: data[data.startIndex + offset ..< data.startIndex + offset + count])
        }
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            max(0, pread(descriptor, raw.baseAddress!, count, off_t(offset)))
        }
        guard read == count else { throw EmulatorFailure() }
        return buffer
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }
}
