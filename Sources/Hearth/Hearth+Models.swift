import Foundation
import HearthHub

extension Hearth {
    /// The hub cache.
    public var cache: HFCache { HFCache(root: configuration.cacheDirectory) }

    /// The Hub API client.
    public var hubClient: HubClient { HubClient(environment: configuration.hub) }

    /// The downloader into the cache.
    public var downloader: SnapshotDownloader { SnapshotDownloader(client: hubClient, cache: cache, options: downloadOptions) }

    /// The sources of models, asked in order: the Hub, then plain URLs.
    public var providers: [any ModelProvider] {
        [HubModelProvider(downloader: downloader), URLModelProvider(cache: cache, client: hubClient, options: downloadOptions)]
    }

    /// What `name` refers to. A file or folder that exists is a path whatever it looks like:
    /// `models/all-MiniLM-L6-v2` typed where that folder is names the folder, not a Hub repo.
    public func reference(_ name: String) throws -> ModelReference {
        let expanded = (name as NSString).expandingTildeInPath
        if !expanded.isEmpty, FileManager.default.fileExists(atPath: expanded) {
            return .path(expanded)
        }
        return try ModelReference.parse(name)
    }

    /// Where the model `name` stands for is on disk, never using the network: its GGUF file,
    /// or the snapshot folder of a repository without one (a sentence-transformers model); nil
    /// when it has to be pulled.
    public func cachedModel(_ name: String) throws -> URL? {
        try cachedModel(try reference(name))
    }

    /// Where `reference` is on disk, never using the network; nil when it has to be pulled.
    public func cachedModel(_ reference: ModelReference) throws -> URL? {
        if case .path(let path) = reference {
            guard FileManager.default.fileExists(atPath: path) else { throw HearthError.fileNotFound(path: path) }
            return URL(fileURLWithPath: path)
        }
        return try provider(for: reference).cachedFiles(for: reference)?.first
    }

    /// The GGUF file `name` stands for if it is on disk; nil when it has to be pulled.
    public func cachedModelFile(_ name: String) throws -> URL? {
        try cachedModel(name).map { try ggufFile($0, name: name) }
    }

    /// Pulls `name` into the cache, reporting progress, and returns where it is: its GGUF file,
    /// or the snapshot folder of a repository without one.
    @discardableResult
    public func pull(_ name: String, progress: @escaping @Sendable (DownloadProgress) -> Void) async throws -> URL {
        let reference = try reference(name)
        if case .path(let path) = reference {
            guard FileManager.default.fileExists(atPath: path) else { throw HearthError.fileNotFound(path: path) }
            return URL(fileURLWithPath: path)
        }
        let files = try await provider(for: reference).pull(reference, progress: progress)
        guard let first = files.first else { throw HearthError.modelNotFound(name: name) }
        return first
    }

    /// The model on disk, pulled first when missing and allowed (never offline).
    func localModel(_ name: String, pullIfMissing: Bool) async throws -> URL {
        if let local = try cachedModel(name) { return local }
        if configuration.hub.offline { throw HearthError.offlineNotCached(name: name) }
        guard pullIfMissing else { throw HearthError.modelNotFound(name: name) }
        return try await pull(name) { _ in }
    }

    /// Notes the use of a Hub model in the cache's bookkeeping.
    func markUsed(_ name: String) {
        if case .hub(let repo, _, _)? = try? reference(name) { CacheUsage(cache: cache).markUsed(repo) }
    }

    /// Pulls `name` into the cache; the sequence reports progress and ends with phase `.done`.
    public func pull(_ name: String) -> AsyncThrowingStream<DownloadProgress, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await pull(name) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func provider(for reference: ModelReference) throws -> any ModelProvider {
        guard let provider = providers.first(where: { $0.handles(reference) }) else {
            throw HearthError.modelNotFound(name: reference.description)
        }
        return provider
    }

    /// `url` if it is a file; in a folder, its one GGUF file. A folder without one is a
    /// repository of another format; one with several needs the file named.
    func ggufFile(_ url: URL, name: String) throws -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { throw HearthError.modelNotFound(name: name) }
        guard isDirectory.boolValue else { return url }
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { $0.lowercased().hasSuffix(".gguf") }.sorted()
        switch files.count {
        case 1:
            return url.appendingPathComponent(files[0])
        case 0:
            throw HearthError.unsupportedModel(reason: "\(name) has no GGUF file (language models load from GGUF; look for a -GGUF repository)")
        default:
            throw HearthError.invalidArgument("\(name) holds \(files.count) GGUF files (\(files.joined(separator: ", "))): name the one to use, such as \((name as NSString).appendingPathComponent(files[0])).")
        }
    }
}
