import Foundation

/// Hearth's own bookkeeping about the models in a hub cache: when each was downloaded and last
/// used. It lives beside the cache, not in it (`<cache>/../hearth/<cache name>.usage.json`,
/// so `~/.cache/huggingface/hearth/hub.usage.json` by default), because huggingface_hub reports
/// every unknown entry in the cache folder as damage. Writes are atomic and serialised across
/// processes with a lock file.
public struct CacheUsage: Sendable {
    /// What is known of one repository.
    public struct Entry: Sendable, Equatable, Codable {
        /// When Hearth last loaded it.
        public var lastUsed: Date?
        /// When Hearth last finished downloading it.
        public var downloadedAt: Date?

        /// An entry with the given dates.
        public init(lastUsed: Date? = nil, downloadedAt: Date? = nil) {
            self.lastUsed = lastUsed
            self.downloadedAt = downloadedAt
        }
    }

    /// The bookkeeping file.
    public let url: URL

    /// The bookkeeping of `cache`.
    public init(cache: HFCache) {
        let parent = cache.root.deletingLastPathComponent()
        url = parent.appendingPathComponent("hearth").appendingPathComponent(cache.root.lastPathComponent + ".usage.json")
    }

    private struct File: Codable {
        var version = 1
        var repos: [String: Entry] = [:]
    }

    /// Every entry, by repository id; empty when the file is missing or unreadable (it is only
    /// bookkeeping: losing it loses nothing but dates).
    public func entries() -> [String: Entry] {
        read().repos
    }

    /// Notes that `repo` was just loaded.
    public func markUsed(_ repo: String, at date: Date = Date()) {
        update { $0.repos[repo, default: Entry()].lastUsed = date }
    }

    /// Notes that `repo` was just downloaded (which also counts as a use).
    public func markDownloaded(_ repo: String, at date: Date = Date()) {
        update {
            $0.repos[repo, default: Entry()].downloadedAt = date
            if $0.repos[repo]?.lastUsed == nil { $0.repos[repo]?.lastUsed = date }
        }
    }

    /// Forgets `repo`.
    public func forget(_ repo: String) {
        update { $0.repos[repo] = nil }
    }

    private func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private func read() -> File {
        guard let data = FileManager.default.contents(atPath: url.path),
              let file = try? decoder().decode(File.self, from: data) else { return File() }
        return file
    }

    private func update(_ change: (inout File) -> Void) {
        // Best effort: a read-only or full disk must not fail a load or a pull.
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let lock = try FileLock.acquireBlocking(url.appendingPathExtension("lock"))
            defer { withExtendedLifetime(lock) {} }
            var file = read()
            change(&file)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(file).write(to: url, options: .atomic)
        } catch {}
    }
}
