import Foundation
import HearthCore

/// One search result from the Hub's model list.
public struct HubModelSummary: Sendable, Equatable, Codable {
    /// `org/name`.
    public var id: String
    /// Downloads in the last month.
    public var downloads: Int
    /// Likes.
    public var likes: Int
    /// What the model does (`text-generation`, `feature-extraction`, …).
    public var pipelineTag: String?
    /// The library it is meant for (`gguf`, `transformers`, …).
    public var libraryName: String?
    /// Tags, including the file formats (`gguf`) and the license (`license:apache-2.0`).
    public var tags: [String]
    /// When the model last changed, as the Hub writes it (ISO 8601).
    public var lastModified: String?

    /// A summary with the given fields.
    public init(id: String, downloads: Int = 0, likes: Int = 0, pipelineTag: String? = nil, libraryName: String? = nil,
                tags: [String] = [], lastModified: String? = nil) {
        self.id = id
        self.downloads = downloads
        self.likes = likes
        self.pipelineTag = pipelineTag
        self.libraryName = libraryName
        self.tags = tags
        self.lastModified = lastModified
    }
}

/// A file of a repository at one commit.
public struct HubFile: Sendable, Equatable, Hashable, Codable {
    /// Path inside the repository, `/`-separated.
    public var path: String
    /// Size in bytes (of the real file for LFS files, not of the pointer).
    public var size: Int?
    /// The git blob id (sha1 of the git object); for LFS files that of the pointer.
    public var blobID: String?
    /// The sha256 of the content, for files stored with Git LFS.
    public var lfsSHA256: String?

    /// A file with the given fields.
    public init(path: String, size: Int? = nil, blobID: String? = nil, lfsSHA256: String? = nil) {
        self.path = path
        self.size = size
        self.blobID = blobID
        self.lfsSHA256 = lfsSHA256
    }

    /// The name the file's blob has in the cache: the sha256 for LFS files, the git blob id
    /// otherwise (the ETag the Hub sends for it).
    public var etag: String? { lfsSHA256 ?? blobID }
}

/// How a model is gated: open, or needs its license accepted (automatically or by review).
public enum HubGating: String, Sendable, Equatable, Codable {
    case open, auto, manual
}

/// What the Hub knows of a model at one revision.
public struct HubModelInfo: Sendable, Equatable, Codable {
    /// `org/name`.
    public var id: String
    /// The owner.
    public var author: String?
    /// The commit the revision resolved to.
    public var commit: String
    /// Downloads in the last month.
    public var downloads: Int
    /// Likes.
    public var likes: Int
    /// The license id, from the model card or the `license:` tag.
    public var license: String?
    /// What the model does.
    public var pipelineTag: String?
    /// Tags.
    public var tags: [String]
    /// Whether a license must be accepted first.
    public var gated: HubGating
    /// Whether only its owners can see it.
    public var isPrivate: Bool
    /// When the model last changed (ISO 8601).
    public var lastModified: String?
    /// Every file, with size and LFS sha256 where the Hub gave them.
    public var files: [HubFile]

    /// Model information with the given fields.
    public init(id: String, author: String? = nil, commit: String, downloads: Int = 0, likes: Int = 0, license: String? = nil,
                pipelineTag: String? = nil, tags: [String] = [], gated: HubGating = .open, isPrivate: Bool = false,
                lastModified: String? = nil, files: [HubFile] = []) {
        self.id = id
        self.author = author
        self.commit = commit
        self.downloads = downloads
        self.likes = likes
        self.license = license
        self.pipelineTag = pipelineTag
        self.tags = tags
        self.gated = gated
        self.isPrivate = isPrivate
        self.lastModified = lastModified
        self.files = files
    }

    /// The files whose paths match any of `patterns` (all files when there are none).
    public func files(matching patterns: [String]) -> [HubFile] {
        let globs = patterns.map(GlobPattern.init)
        return files.filter { globs.allow($0.path) }
    }

    /// Bytes to download for the files matching `patterns` (files of unknown size count 0).
    public func downloadSize(patterns: [String] = []) -> Int {
        files(matching: patterns).reduce(0) { $0 + ($1.size ?? 0) }
    }
}

/// The Hub's JSON, decoded leniently: a field that is missing or of another type than expected
/// becomes nil rather than failing the whole answer, because the API adds and changes fields.
enum HubJSON {
    static func object(_ data: Data) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw HearthError.hubInvalidResponse("not JSON (\(data.count) bytes)")
        }
    }

    static func summary(_ json: [String: Any]) -> HubModelSummary? {
        guard let id = (json["id"] as? String) ?? (json["modelId"] as? String) else { return nil }
        return HubModelSummary(id: id, downloads: json["downloads"] as? Int ?? 0, likes: json["likes"] as? Int ?? 0,
                               pipelineTag: json["pipeline_tag"] as? String, libraryName: json["library_name"] as? String,
                               tags: json["tags"] as? [String] ?? [], lastModified: json["lastModified"] as? String)
    }

    static func modelInfo(_ json: [String: Any]) throws -> HubModelInfo {
        guard let id = (json["id"] as? String) ?? (json["modelId"] as? String), let sha = json["sha"] as? String else {
            throw HearthError.hubInvalidResponse("model information without an id or commit")
        }
        let tags = json["tags"] as? [String] ?? []
        let card = json["cardData"] as? [String: Any]
        let license = (card?["license"] as? String)
            ?? tags.first { $0.hasPrefix("license:") }.map { String($0.dropFirst("license:".count)) }
        let gated: HubGating
        switch json["gated"] {
        case let text as String: gated = HubGating(rawValue: text) ?? .manual
        case let flag as Bool: gated = flag ? .manual : .open
        default: gated = .open
        }
        let files = (json["siblings"] as? [[String: Any]] ?? []).compactMap { sibling -> HubFile? in
            guard let path = sibling["rfilename"] as? String else { return nil }
            let lfs = sibling["lfs"] as? [String: Any]
            return HubFile(path: path, size: (lfs?["size"] as? Int) ?? (sibling["size"] as? Int),
                           blobID: sibling["blobId"] as? String, lfsSHA256: (lfs?["sha256"] as? String) ?? (lfs?["oid"] as? String))
        }
        return HubModelInfo(id: id, author: json["author"] as? String, commit: sha, downloads: json["downloads"] as? Int ?? 0,
                            likes: json["likes"] as? Int ?? 0, license: license, pipelineTag: json["pipeline_tag"] as? String,
                            tags: tags, gated: gated, isPrivate: json["private"] as? Bool ?? false,
                            lastModified: json["lastModified"] as? String, files: files)
    }

    static func treeEntry(_ json: [String: Any]) -> HubFile? {
        guard json["type"] as? String == "file", let path = json["path"] as? String else { return nil }
        let lfs = json["lfs"] as? [String: Any]
        return HubFile(path: path, size: (lfs?["size"] as? Int) ?? (json["size"] as? Int), blobID: json["oid"] as? String,
                       lfsSHA256: (lfs?["oid"] as? String) ?? (lfs?["sha256"] as? String))
    }
}
