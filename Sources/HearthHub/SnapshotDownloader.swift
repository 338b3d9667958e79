import Foundation
import HearthCore

/// A snapshot of a repository in the cache.
public struct Snapshot: Sendable, Equatable {
    /// `org/name`.
    public var repo: String
    /// The commit.
    public var commit: String
    /// The snapshot folder (`snapshots/<commit>`).
    public var url: URL
    /// Paths of the files that were asked for, inside the folder.
    public var files: [String]

    /// The local URL of a file of the snapshot.
    public func url(of path: String) -> URL { url.appendingPathComponent(path) }
}

/// Pulls repositories from the Hub into the cache.
///
/// Each file is fetched with up to four ranged connections, retried with backoff, saved with
/// its progress so a killed pull resumes where it stopped, checked against the Hub's sha256
/// (or git blob id) before it becomes visible, and guarded by a lock that other Hearth and
/// huggingface_hub processes respect. Cancelling leaves only resumable `.incomplete` files.
///
/// ```swift
/// let downloader = SnapshotDownloader()
/// for try await progress in downloader.download("HuggingFaceTB/SmolLM2-135M-Instruct", patterns: ["*.json"]) {
///     print(progress.phase, progress.completedBytes, "/", progress.totalBytes)
/// }
/// ```
public struct SnapshotDownloader: Sendable {
    /// The Hub.
    public var client: HubClient
    /// Where files go.
    public var cache: HFCache
    /// How the network is used.
    public var options: DownloadOptions

    /// A downloader into `cache` (default: the client's cache directory).
    public init(client: HubClient = HubClient(), cache: HFCache? = nil, options: DownloadOptions = DownloadOptions()) {
        self.client = client
        self.cache = cache ?? HFCache(root: client.environment.cacheDirectory)
        self.options = options
    }

    /// Pulls the files of `repo` at `revision` that match `patterns` (all when empty) and reports
    /// progress; the last report has phase `.done` and the snapshot folder. Ending the iteration
    /// early cancels the pull.
    public func download(_ repo: String, revision: String = "main", patterns: [String] = []) -> AsyncThrowingStream<DownloadProgress, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await download(repo, revision: revision, patterns: patterns) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Pulls the files of `repo` at `revision` that match `patterns` (all when empty), calling
    /// `progress` along the way, and returns the snapshot.
    @discardableResult
    public func download(_ repo: String, revision: String = "main", patterns: [String] = [],
                         progress: @escaping @Sendable (DownloadProgress) -> Void) async throws -> Snapshot {
        let tracker = ProgressTracker(repo: repo, listener: progress)
        let snapshot = try await pull(repo, revision: revision, patterns: patterns, tracker: tracker)
        tracker.update {
            $0.phase = .done
            $0.file = nil
            $0.snapshot = snapshot.url
            $0.secondsRemaining = 0
        }
        return snapshot
    }

    /// The files `repo` has in the cache at `revision`, without the network.
    public func cached(_ repo: String, revision: String = "main", patterns: [String] = []) -> Snapshot? {
        guard let commit = cache.commit(repo, revision: revision) else { return nil }
        let url = cache.snapshotDirectory(repo, commit: commit)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let globs = patterns.map(GlobPattern.init)
        let files = cache.cachedRepo(repo)?.revisions.first { $0.commit == commit }?.files.map(\.path).filter { globs.allow($0) } ?? []
        return Snapshot(repo: repo, commit: commit, url: url, files: files)
    }

    private func pull(_ repo: String, revision: String, patterns: [String], tracker: ProgressTracker) async throws -> Snapshot {
        guard !repo.isEmpty, (try? HFCache.safeComponents(repo)) != nil, repo.split(separator: "/").count <= 2 else {
            throw HearthError.invalidArgument("\"\(repo)\" is not a repository id; use org/name.")
        }
        if client.environment.offline {
            guard let snapshot = cached(repo, revision: revision, patterns: patterns), !snapshot.files.isEmpty else {
                throw HearthError.offlineNotCached(name: revision == "main" ? repo : "\(repo)@\(revision)")
            }
            return snapshot
        }
        let info: HubModelInfo
        do {
            info = try await client.modelInfo(repo, revision: revision)
        } catch let error as HearthError where error.isRetryable {
            // The Hub cannot be reached: what the cache has is the best answer, as in huggingface_hub.
            if let snapshot = cached(repo, revision: revision, patterns: patterns), !snapshot.files.isEmpty { return snapshot }
            throw error
        }
        guard HFCache.isCommit(info.commit) else { throw HearthError.hubInvalidResponse("commit id \"\(info.commit)\"") }
        var files = info.files(matching: patterns)
        if files.isEmpty {
            throw HearthError.hubNotFound(repo: repo, revision: revision, file: patterns.joined(separator: ", "))
        }
        for index in files.indices {
            _ = try HFCache.safeComponents(files[index].path)
            if files[index].etag == nil || files[index].size == nil {
                files[index] = try await metadata(repo, commit: info.commit, file: files[index])
            }
            guard let etag = files[index].etag, HFCache.isSafeEtag(etag) else {
                throw HearthError.unsafeRemotePath(files[index].etag ?? files[index].path)
            }
        }

        // A cache this process cannot write (shared read-only) says so before anything moves,
        // unless it already holds every file.
        let present = Set(cached(repo, revision: info.commit, patterns: patterns)?.files ?? [])
        if !files.allSatisfy({ present.contains($0.path) }) { try cache.requireWritable(repo) }

        // Room for everything still missing, before any byte moves.
        let blobs = cache.blobsDirectory(repo)
        var needed = 0
        var seen = Set<String>()
        for file in files {
            let etag = file.etag!
            guard seen.insert(etag).inserted, !FileManager.default.fileExists(atPath: blobs.appendingPathComponent(etag).path) else { continue }
            let resumable = BlobDownload.resumableBytes(partial: blobs.appendingPathComponent(etag + ".hearth.incomplete"),
                                                        ledger: blobs.appendingPathComponent(etag + ".hearth-ranges.incomplete"),
                                                        size: file.size!, etag: etag)
            // A resumed file is already allocated at its full size; a new one takes all of it.
            needed += resumable > 0 ? 0 : file.size!
        }
        if needed > 0, let available = availableDiskSpace(at: blobs), available < needed {
            throw HearthError.insufficientDiskSpace(needed: needed, available: available, path: cache.root.path)
        }

        let total = files.reduce(0) { $0 + $1.size! }
        tracker.update {
            $0.phase = .downloading
            $0.fileCount = files.count
            $0.totalBytes = total
        }
        for (index, file) in files.enumerated() {
            tracker.update {
                $0.file = file.path
                $0.fileIndex = index + 1
                $0.phase = .downloading
            }
            try await fetch(repo, commit: info.commit, file: file, tracker: tracker)
            try cache.link(repo, commit: info.commit, path: file.path, etag: file.etag!)
        }
        try cache.writeRef(repo, revision: revision, commit: info.commit)
        CacheUsage(cache: cache).markDownloaded(repo)
        return Snapshot(repo: repo, commit: info.commit, url: cache.snapshotDirectory(repo, commit: info.commit), files: files.map(\.path))
    }

    /// Puts one file's blob in the cache, unless it is there already.
    private func fetch(_ repo: String, commit: String, file: HubFile, tracker: ProgressTracker) async throws {
        let etag = file.etag!, size = file.size!
        let blob = cache.blobURL(repo, etag: etag)
        let partial = blob.deletingLastPathComponent().appendingPathComponent(etag + ".hearth.incomplete")
        let ranges = blob.deletingLastPathComponent().appendingPathComponent(etag + ".hearth-ranges.incomplete")
        if FileManager.default.fileExists(atPath: blob.path), !FileManager.default.fileExists(atPath: partial.path) {
            tracker.add(size, transferred: false)
            return
        }
        guard let digest = ExpectedDigest(etag: etag) else {
            throw HearthError.hubInvalidResponse("\(file.path) has no sha256 or git blob id to check it against (etag \(etag))")
        }
        try FileManager.default.createDirectory(at: blob.deletingLastPathComponent(), withIntermediateDirectories: true)
        let lock = try await FileLock.acquire(cache.lockURL(repo, etag: etag))
        defer { withExtendedLifetime(lock) {} }
        // Another process (Hearth, or huggingface_hub with its own partial file) may have
        // finished it meanwhile; a partial file of Hearth's left from before is then garbage.
        if FileManager.default.fileExists(atPath: blob.path) {
            try? FileManager.default.removeItem(at: partial)
            try? FileManager.default.removeItem(at: ranges)
            tracker.add(size, transferred: false)
            return
        }
        let download = BlobDownload(http: client.http, url: client.resolveURL(repo, revision: commit, path: file.path), repo: repo,
                                    path: file.path, size: size, etag: etag, digest: digest, blob: blob, options: options,
                                    progress: tracker)
        try await download.run()
    }

    /// Size and etag of a file the model information did not describe, from a HEAD request on
    /// its resolve URL (the Hub puts them on the redirect for LFS files).
    private func metadata(_ repo: String, commit: String, file: HubFile) async throws -> HubFile {
        let url = client.resolveURL(repo, revision: commit, path: file.path)
        let head = try await client.retry.run {
            let (head, body) = try await client.http.send(.HEAD, url, headers: [("Accept-Encoding", "identity")], followRedirects: false)
            _ = try? await body.collect(upTo: 1 << 16)
            if !(300..<400).contains(head.status) { try HubHTTP.check(head, repo: repo, revision: commit, file: file.path) }
            return head
        }
        var result = file
        if let etag = (head.header("X-Linked-Etag") ?? head.header("ETag")).map(Self.normalizeEtag) { result.blobID = etag }
        if let size = (head.header("X-Linked-Size") ?? ((300..<400).contains(head.status) ? nil : head.header("Content-Length"))).flatMap({ Int($0) }) {
            result.size = size
        }
        guard result.size != nil, result.etag != nil else {
            throw HearthError.hubInvalidResponse("no size or etag for \(file.path)")
        }
        return result
    }

    /// An ETag without its weak marker and quotes.
    static func normalizeEtag(_ text: String) -> String {
        var etag = Substring(text)
        if etag.hasPrefix("W/") { etag = etag.dropFirst(2) }
        return etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
