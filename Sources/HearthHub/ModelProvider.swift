import Crypto
import Foundation
import HearthCore

/// A source of model files. Each provider says which references it serves, finds a model
/// already on disk without the network, and fetches one into local storage. New sources (an
/// S3 bucket, a company mirror) are added by conforming to this protocol.
public protocol ModelProvider: Sendable {
    /// Whether this provider serves `reference`.
    func handles(_ reference: ModelReference) -> Bool
    /// The local files of `reference` if they are all on disk; never uses the network.
    func cachedFiles(for reference: ModelReference) throws -> [URL]?
    /// Fetches `reference`, reporting progress, and returns its local files (the model file
    /// first).
    func pull(_ reference: ModelReference, progress: @escaping @Sendable (DownloadProgress) -> Void) async throws -> [URL]
}

/// Models from the Hugging Face Hub, in the hub cache. A reference with a quantization (or a
/// GGUF repository without one) resolves to that GGUF file; other repositories are pulled
/// whole.
public struct HubModelProvider: ModelProvider {
    /// The downloader (and through it the client and the cache).
    public let downloader: SnapshotDownloader

    /// A provider pulling with `downloader`.
    public init(downloader: SnapshotDownloader) { self.downloader = downloader }

    /// Hub references (`org/repo`, with a revision or quantization, and aliases).
    public func handles(_ reference: ModelReference) -> Bool {
        if case .hub = reference { return true }
        return false
    }

    /// The chosen GGUF file(s) (or whisper.cpp file) in the cached snapshot, or the snapshot
    /// folder for a repository without them.
    public func cachedFiles(for reference: ModelReference) throws -> [URL]? {
        guard case .hub(let repo, let revision, let quantization) = reference,
              let snapshot = downloader.cached(repo, revision: revision) else { return nil }
        let files = snapshot.files.map { HubFile(path: $0) }
        guard let picked = try? QuantizationPicker.pick(files, quantization: quantization) else { return nil }
        if picked.isEmpty { return files.isEmpty ? nil : [snapshot.url] }
        return picked.map { snapshot.url(of: $0.path) }
    }

    /// Pulls the chosen GGUF file(s) or whisper.cpp file, or the whole repository when it has
    /// neither; falls back to the cache when the Hub cannot be reached.
    public func pull(_ reference: ModelReference, progress: @escaping @Sendable (DownloadProgress) -> Void) async throws -> [URL] {
        guard case .hub(let repo, let revision, let quantization) = reference else {
            throw HearthError.invalidArgument("\(reference.description) is not a Hub model.")
        }
        if downloader.client.environment.offline {
            if let files = try cachedFiles(for: reference) { return files }
            throw HearthError.offlineNotCached(name: reference.description)
        }
        let picked: [String]
        do {
            let info = try await downloader.client.modelInfo(repo, revision: revision)
            picked = try QuantizationPicker.pick(info.files, quantization: quantization).map(\.path)
        } catch let error as HearthError where error.isRetryable {
            if let files = try cachedFiles(for: reference) { return files }
            throw error
        }
        // Without GGUF or whisper.cpp files the whole repository is the model, less what a
        // curated entry says is not needed (other formats of the same weights).
        let patterns = picked.isEmpty ? ModelRegistry.curated.entry(repo: repo)?.patterns ?? [] : picked
        let snapshot = try await downloader.download(repo, revision: revision, patterns: patterns, progress: progress)
        return picked.isEmpty ? [snapshot.url] : picked.map { snapshot.url(of: $0) }
    }
}

/// Models at plain URLs, checked against a sha256 given with the URL and kept under
/// `<cache>/../hearth/files/<sha256>/<file name>`.
public struct URLModelProvider: ModelProvider {
    /// Where files go.
    public let directory: URL
    /// The network settings (redirects, retries, timeouts) of the Hub client are reused.
    public let client: HubClient
    /// How the network is used.
    public let options: DownloadOptions

    /// A provider storing beside `cache`.
    public init(cache: HFCache, client: HubClient, options: DownloadOptions = DownloadOptions()) {
        directory = cache.root.deletingLastPathComponent().appendingPathComponent("hearth/files")
        self.client = client
        self.options = options
    }

    /// URL references.
    public func handles(_ reference: ModelReference) -> Bool {
        if case .url = reference { return true }
        return false
    }

    private func destination(_ url: URL, sha256: String) throws -> URL {
        guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
            throw HearthError.invalidArgument("A URL model needs its sha256: add #sha256=<64 hex digits> to \(url.absoluteString).")
        }
        let name = url.lastPathComponent
        guard !name.isEmpty, name != "/", name != ".", name != ".." else { throw HearthError.unsafeRemotePath(url.path) }
        return directory.appendingPathComponent(sha256).appendingPathComponent(name)
    }

    /// The downloaded file, if it is there.
    public func cachedFiles(for reference: ModelReference) throws -> [URL]? {
        guard case .url(let url, let sha256?) = reference else { return nil }
        let file = try destination(url, sha256: sha256)
        return FileManager.default.fileExists(atPath: file.path) ? [file] : nil
    }

    /// Downloads the file with the same ranged, resumable, verified transfer as Hub files.
    public func pull(_ reference: ModelReference, progress: @escaping @Sendable (DownloadProgress) -> Void) async throws -> [URL] {
        guard case .url(let url, let sha256) = reference else {
            throw HearthError.invalidArgument("\(reference.description) is not a URL.")
        }
        let file = try destination(url, sha256: sha256 ?? "")
        if FileManager.default.fileExists(atPath: file.path) { return [file] }
        if client.environment.offline { throw HearthError.offlineNotCached(name: url.absoluteString) }
        let tracker = ProgressTracker(repo: url.absoluteString, listener: progress)
        let http = HubHTTP(readTimeout: client.readTimeout, token: nil, endpoint: client.environment.endpoint)
        let head = try await client.retry.run {
            let (head, body) = try await http.send(.HEAD, url, headers: [("Accept-Encoding", "identity")])
            _ = try? await body.collect(upTo: 1 << 16)
            try HubHTTP.check(head, repo: url.absoluteString, file: url.lastPathComponent)
            return head
        }
        guard let size = head.header("Content-Length").flatMap({ Int($0) }) else {
            throw HearthError.hubInvalidResponse("no Content-Length for \(url.absoluteString)")
        }
        let folder = file.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let available = availableDiskSpace(at: folder), available < size {
            throw HearthError.insufficientDiskSpace(needed: size, available: available, path: folder.path)
        }
        tracker.update {
            $0.phase = .downloading
            $0.file = file.lastPathComponent
            $0.fileIndex = 1
            $0.fileCount = 1
            $0.totalBytes = size
        }
        let lock = try await FileLock.acquire(folder.appendingPathComponent(".lock"))
        defer { withExtendedLifetime(lock) {} }
        if !FileManager.default.fileExists(atPath: file.path) {
            // Downloaded as a blob named by its sha256, then given its file name.
            let blob = folder.appendingPathComponent(sha256!)
            let download = BlobDownload(http: http, url: head.url, repo: url.absoluteString, path: file.lastPathComponent, size: size,
                                        etag: sha256!, digest: .sha256(sha256!), blob: blob, options: options, progress: tracker)
            try await download.run()
            guard rename(blob.path, file.path) == 0 else {
                throw HearthError.resourceUnavailable("Cannot move the download to \(file.path) (errno \(errno))")
            }
        }
        tracker.update {
            $0.phase = .done
            $0.snapshot = folder
        }
        return [file]
    }
}
