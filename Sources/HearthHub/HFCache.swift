import Foundation
import HearthCore

/// The Hugging Face hub cache, read and written exactly as huggingface_hub does, so that either
/// can use what the other downloaded:
///
///     <root>/models--org--name/
///         blobs/<etag>                 file contents, named by sha256 (LFS) or git blob id
///         blobs/<etag>….incomplete     a download in progress (nothing else is unfinished)
///         snapshots/<commit>/<path>    relative symlinks to ../../blobs/<etag>
///         refs/<revision>              the commit a branch or tag pointed at
///     <root>/.locks/models--org--name/<etag>.lock
public struct HFCache: Sendable {
    /// The cache folder.
    public let root: URL

    /// The cache at `root` (which need not exist yet).
    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    /// The folder name of a model repository: `org/name` → `models--org--name`.
    public static func folderName(repo: String) -> String {
        (["models"] + repo.split(separator: "/").map(String.init)).joined(separator: "--")
    }

    /// The repository id of a model folder name, nil for anything else.
    public static func repo(folderName: String) -> String? {
        guard folderName.hasPrefix("models--") else { return nil }
        let id = folderName.dropFirst("models--".count).replacingOccurrences(of: "--", with: "/")
        return id.isEmpty ? nil : id
    }

    /// Whether `text` is a full commit id (40 hex digits).
    public static func isCommit(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The folder of `repo`.
    public func repoDirectory(_ repo: String) -> URL { root.appendingPathComponent(Self.folderName(repo: repo)) }

    /// Throws when this process cannot write `repo`'s folder (or the nearest folder of it that
    /// exists): a cache shared read-only, say, mounted on several machines.
    public func requireWritable(_ repo: String) throws {
        var path = repoDirectory(repo)
        while !FileManager.default.fileExists(atPath: path.path), path.pathComponents.count > 1 {
            path = path.deletingLastPathComponent()
        }
        guard access(path.path, W_OK) != 0 else { return }
        throw HearthError.cacheNotWritable(path: root.path, reason: "\(path.path): \(String(cString: strerror(errno)))")
    }
    func blobsDirectory(_ repo: String) -> URL { repoDirectory(repo).appendingPathComponent("blobs") }
    func blobURL(_ repo: String, etag: String) -> URL { blobsDirectory(repo).appendingPathComponent(etag) }
    func snapshotDirectory(_ repo: String, commit: String) -> URL {
        repoDirectory(repo).appendingPathComponent("snapshots").appendingPathComponent(commit)
    }
    func refURL(_ repo: String, revision: String) -> URL {
        repoDirectory(repo).appendingPathComponent("refs").appendingPathComponent(revision)
    }
    func lockURL(_ repo: String, etag: String) -> URL {
        root.appendingPathComponent(".locks").appendingPathComponent(Self.folderName(repo: repo)).appendingPathComponent(etag + ".lock")
    }

    /// The commit `revision` stands for in the cache: the content of its ref, or the revision
    /// itself when it is a commit with a snapshot.
    public func commit(_ repo: String, revision: String) -> String? {
        if Self.isCommit(revision), FileManager.default.fileExists(atPath: snapshotDirectory(repo, commit: revision).path) {
            return revision
        }
        guard Self.isSafeRevision(revision),
              let data = FileManager.default.contents(atPath: refURL(repo, revision: revision).path) else { return nil }
        let commit = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return commit.isEmpty ? nil : commit
    }

    /// The snapshot folder of `repo` at `revision`, if the cache has it.
    public func snapshot(_ repo: String, revision: String = "main") -> URL? {
        guard let commit = commit(repo, revision: revision) else { return nil }
        let url = snapshotDirectory(repo, commit: commit)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// The path segments of `path` if it stays inside a snapshot; throws for `..`, `.`, empty
    /// segments, absolute paths and backslashes, which a hostile server could use to write
    /// anywhere.
    static func safeComponents(_ path: String) throws -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !path.hasPrefix("/"), !path.contains("\\"), !path.contains("\0"), !parts.isEmpty,
              parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw HearthError.unsafeRemotePath(path)
        }
        return parts
    }

    static func isSafeRevision(_ revision: String) -> Bool {
        (try? safeComponents(revision)) != nil
    }

    static func isSafeEtag(_ etag: String) -> Bool {
        !etag.isEmpty && etag.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95 }
    }

    /// Points `snapshots/<commit>/<path>` at the blob `etag` with a relative symlink, replacing
    /// whatever was there in one rename, so a reader never sees a half-made entry.
    func link(_ repo: String, commit: String, path: String, etag: String) throws {
        let parts = try Self.safeComponents(path)
        guard Self.isCommit(commit) || Self.isSafeRevision(commit), Self.isSafeEtag(etag) else {
            throw HearthError.unsafeRemotePath("\(commit)/\(etag)")
        }
        var entry = snapshotDirectory(repo, commit: commit)
        for part in parts { entry.appendPathComponent(part) }
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: entry.deletingLastPathComponent(), withIntermediateDirectories: true)
        // From snapshots/<commit>/<parts…> back up to the repo folder: one step per folder.
        let target = String(repeating: "../", count: parts.count + 1) + "blobs/" + etag
        if (try? fileManager.destinationOfSymbolicLink(atPath: entry.path)) == target { return }
        let temporary = entry.deletingLastPathComponent().appendingPathComponent(".\(entry.lastPathComponent).\(UUID().uuidString).incomplete")
        try fileManager.createSymbolicLink(atPath: temporary.path, withDestinationPath: target)
        guard rename(temporary.path, entry.path) == 0 else {
            try? fileManager.removeItem(at: temporary)
            throw HearthError.resourceUnavailable("Cannot create \(entry.path) (errno \(errno))")
        }
    }

    /// Records that `revision` points at `commit` (nothing to record when it is the commit).
    func writeRef(_ repo: String, revision: String, commit: String) throws {
        guard revision != commit else { return }
        guard Self.isSafeRevision(revision) else { throw HearthError.unsafeRemotePath(revision) }
        let url = refURL(repo, revision: revision)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        if let current = FileManager.default.contents(atPath: url.path), String(decoding: current, as: UTF8.self) == commit { return }
        try Data(commit.utf8).write(to: url, options: .atomic)
    }
}

/// A file of a cached snapshot.
public struct CachedFile: Sendable, Equatable {
    /// Path inside the repository.
    public var path: String
    /// The snapshot entry (a symlink, or a plain file in caches made without symlinks).
    public var url: URL
    /// The blob it points at.
    public var blobURL: URL
    /// Bytes.
    public var size: Int
    /// Last change of the blob.
    public var lastModified: Date
}

/// One commit of a repository in the cache.
public struct CachedRevision: Sendable, Equatable {
    /// The commit id (the snapshot folder's name).
    public var commit: String
    /// Branches and tags pointing at it.
    public var refs: [String]
    /// Its files, sorted by path.
    public var files: [CachedFile]
    /// The snapshot folder.
    public var url: URL
    /// Bytes of its distinct blobs.
    public var size: Int
    /// The newest blob's change time.
    public var lastModified: Date
}

/// A repository in the cache.
public struct CachedRepo: Sendable, Equatable {
    /// `org/name`.
    public var id: String
    /// Its folder.
    public var url: URL
    /// Its snapshots, newest first.
    public var revisions: [CachedRevision]
    /// Bytes of the blobs its snapshots use, each counted once.
    public var size: Int
    /// The newest blob's change time.
    public var lastModified: Date
    /// The newest blob's access time.
    public var lastAccessed: Date
}

extension HFCache {
    /// Every model repository in the cache. Folders that are not model repositories (datasets,
    /// `.locks`, damaged ones) are skipped rather than failing the scan.
    public func scan() -> [CachedRepo] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return names.sorted().compactMap { name in
            guard let id = Self.repo(folderName: name) else { return nil }
            return cachedRepo(id)
        }
    }

    /// `repo` as the cache holds it, nil if it has no snapshot folder.
    public func cachedRepo(_ repo: String) -> CachedRepo? {
        let fileManager = FileManager.default
        let directory = repoDirectory(repo)
        let snapshots = directory.appendingPathComponent("snapshots")
        guard let commits = try? fileManager.contentsOfDirectory(atPath: snapshots.path) else { return nil }
        var refs: [String: [String]] = [:]
        let refsDirectory = directory.appendingPathComponent("refs")
        if let enumerator = fileManager.enumerator(atPath: refsDirectory.path) {
            while let name = enumerator.nextObject() as? String {
                let url = refsDirectory.appendingPathComponent(name)
                guard let data = fileManager.contents(atPath: url.path) else { continue }
                refs[String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), default: []].append(name)
            }
        }
        var blobs: [String: (size: Int, modified: Date, accessed: Date)] = [:]
        var revisions: [CachedRevision] = []
        for commit in commits where !commit.hasPrefix(".") {
            let url = snapshots.appendingPathComponent(commit)
            var files: [CachedFile] = []
            let enumerator = fileManager.enumerator(atPath: url.path)
            while let relative = enumerator?.nextObject() as? String {
                let entry = url.appendingPathComponent(relative)
                guard !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") && $0.hasSuffix(".incomplete") }) else { continue }
                var blob = entry
                if let target = try? fileManager.destinationOfSymbolicLink(atPath: entry.path) {
                    blob = URL(fileURLWithPath: target, relativeTo: entry.deletingLastPathComponent()).standardizedFileURL
                }
                var info = stat()
                guard stat(blob.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                #if canImport(Darwin)
                let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtimespec.tv_sec))
                let accessed = Date(timeIntervalSince1970: TimeInterval(info.st_atimespec.tv_sec))
                #else
                let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))
                let accessed = Date(timeIntervalSince1970: TimeInterval(info.st_atim.tv_sec))
                #endif
                blobs[blob.path] = (Int(info.st_size), modified, accessed)
                files.append(CachedFile(path: relative, url: entry, blobURL: blob, size: Int(info.st_size), lastModified: modified))
            }
            files.sort { $0.path < $1.path }
            let distinct = Dictionary(files.map { ($0.blobURL.path, $0.size) }, uniquingKeysWith: { a, _ in a })
            let modified = files.map(\.lastModified).max()
                ?? ((try? fileManager.attributesOfItem(atPath: url.path)[.modificationDate]) as? Date) ?? .distantPast
            revisions.append(CachedRevision(commit: commit, refs: (refs[commit] ?? []).sorted(), files: files, url: url,
                                            size: distinct.values.reduce(0, +), lastModified: modified))
        }
        revisions.sort { $0.lastModified > $1.lastModified }
        return CachedRepo(id: repo, url: directory, revisions: revisions, size: blobs.values.reduce(0) { $0 + $1.size },
                          lastModified: blobs.values.map(\.modified).max() ?? .distantPast,
                          lastAccessed: blobs.values.map(\.accessed).max() ?? .distantPast)
    }

    /// Deletes `repo` from the cache: its folder and its locks. Returns the bytes freed.
    @discardableResult
    public func remove(_ repo: String) throws -> Int {
        let size = cachedRepo(repo)?.size ?? 0
        let directory = repoDirectory(repo)
        guard FileManager.default.fileExists(atPath: directory.path) else {
            throw HearthError.modelNotFound(name: repo)
        }
        try FileManager.default.removeItem(at: directory)
        try? FileManager.default.removeItem(at: root.appendingPathComponent(".locks").appendingPathComponent(Self.folderName(repo: repo)))
        return size
    }
}
