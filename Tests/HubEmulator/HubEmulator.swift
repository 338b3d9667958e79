import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A Hugging Face Hub on loopback for tests: the model API (search, model info, file tree) and
/// `/{repo}/resolve/{revision}/{path}` with the headers huggingface_hub and Hearth rely on
/// (X-Repo-Commit, ETag, X-Linked-Etag, X-Linked-Size, Accept-Ranges, Content-Range), LFS files
/// redirected to a long signed-looking storage URL on another origin, and faults that a test
/// switches on for the next requests.
public final class HubEmulator: Sendable {
    /// A file of an emulated repository.
    public struct File: Sendable {
        /// Path in the repository.
        public var path: String
        /// Its bytes: in memory, or a file on disk for large ones.
        public var content: Content
        /// Whether it is stored with Git LFS (and so served by redirect, named by sha256).
        public var lfs: Bool

        /// Where a file's bytes come from.
        public enum Content: Sendable {
            case data(Data)
            case file(URL)
        }

        /// A file held in memory; LFS unless it is small and not a weight file.
        public init(_ path: String, _ data: Data, lfs: Bool? = nil) {
            self.path = path
            content = .data(data)
            self.lfs = lfs ?? (data.count > 4096 || path.hasSuffix(".gguf") || path.hasSuffix(".safetensors"))
        }

        /// A file served from disk, always as LFS.
        public init(_ path: String, contentsOf url: URL) {
            self.path = path
            content = .file(url)
            lfs = true
        }
    }

    /// Who may read a repository.
    public enum Access: Sendable, Equatable {
        case open
        /// Needs this token: 401 without one, 403 (GatedRepo) with another.
        case gated(token: String)
        /// Needs this token: 401 (RepoNotFound) without, 404 with another.
        case privateRepo(token: String)
    }

    /// An emulated model repository at one commit.
    public struct Repo: Sendable {
        public var id: String
        public var commit: String
        public var files: [File]
        public var access: Access
        public var downloads: Int
        public var likes: Int
        public var tags: [String]
        public var pipelineTag: String?
        /// A size for a file that the model information claims instead of the real one (to test
        /// the disk-space check without a huge file).
        public var claimedSizes: [String: Int]
        /// Whether model information leaves out sizes and hashes even when asked for them, as
        /// older Hub answers do, so clients must HEAD each file.
        public var omitsFileMetadata = false

        /// A repository; the commit id is derived from the id unless given.
        public init(_ id: String, files: [File], commit: String? = nil, access: Access = .open, downloads: Int = 0, likes: Int = 0,
                    tags: [String] = [], pipelineTag: String? = "text-generation", claimedSizes: [String: Int] = [:]) {
            self.id = id
            self.commit = commit ?? HubEmulator.hex(Insecure.SHA1.hash(data: Data("commit of \(id)".utf8)))
            self.files = files
            self.access = access
            self.downloads = downloads
            self.likes = likes
            self.tags = tags
            self.pipelineTag = pipelineTag
            self.claimedSizes = claimedSizes
        }
    }

    /// Something that goes wrong on purpose.
    public enum Fault: Sendable, Equatable {
        /// The body stops after this many bytes and the connection is closed.
        case dropConnection(afterBytes: Int)
        /// Bytes of the body are flipped.
        case corruptBody
        /// 429 with this Retry-After (seconds).
        case tooManyRequests(retryAfter: Int)
        /// 503.
        case serviceUnavailable
        /// The body is sent at this rate.
        case trickle(bytesPerSecond: Int)
        /// The body is sent in small pieces until this many bytes of its file have been served
        /// (by every request together), then holds until `clearFaults()` or `stop()`, sending
        /// 4 KiB a second (a client that saves its progress as bytes come still does): a
        /// download stops where a test wants it however slow the machine is.
        case hold(afterServed: Int)
    }

    struct Stored: Sendable {
        var file: File
        var size: Int
        var sha256: String
        var gitSHA1: String
        var pointer: String
    }

    struct Injected {
        var fault: Fault
        var path: String?
        var remaining: Int
    }

    struct State {
        var faults: [Injected] = []
        var served: [String: Int] = [:]
        var sending: [String: Int] = [:]
        /// Counts `clearFaults()` and `stop()` calls, each of which lets held bodies go on.
        var releases = 0
        var requests: [String] = []
        var rangeStarts: [String: [Int]] = [:]
        var port = 0
        var task: Task<Void, Error>?
    }

    /// Entries per page of the tree API (the Hub uses 1000), for tests of paging.
    public let treePageSize: Int
    let repos: [String: Repo]
    let stored: [String: [String: Stored]]
    let state = Mutex(State())
    /// Host name for the storage redirects: another origin than the API's, as on the real Hub,
    /// so clients must not forward their token there.
    public let storageHost = "localhost"

    /// An emulator serving `repos`; call `start()` before use.
    public init(repos: [Repo], treePageSize: Int = 1000) throws {
        self.treePageSize = max(1, treePageSize)
        var byID: [String: Repo] = [:]
        var stored: [String: [String: Stored]] = [:]
        for repo in repos {
            byID[repo.id] = repo
            var files: [String: Stored] = [:]
            for file in repo.files {
                let (size, sha256, sha1) = try Self.digests(file.content)
                let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:\(sha256)\nsize \(size)\n"
                files[file.path] = Stored(file: file, size: size, sha256: sha256, gitSHA1: sha1, pointer: pointer)
            }
            stored[repo.id] = files
        }
        self.repos = byID
        self.stored = stored
    }

    /// The Hub's base URL (for `HF_ENDPOINT`).
    public var endpoint: URL { URL(string: "http://127.0.0.1:\(state.withLock { $0.port })")! }

    /// Starts serving on a free loopback port.
    public func start() async throws {
        let router = Router()
        router.get("**") { request, _ in try await self.respond(request, head: false) }
        router.head("**") { request, _ in try await self.respond(request, head: true) }
        router.get("/") { request, _ in try await self.respond(request, head: false) }
        let (portStream, portContinuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "hub-emulator")
        logger.logLevel = .critical
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in portContinuation.yield(channel.localAddress?.port ?? 0) },
                              logger: logger)
        let task = Task { try await app.runService() }
        var port = 0
        for await value in portStream {
            port = value
            break
        }
        state.withLock {
            $0.port = port
            $0.task = task
        }
    }

    /// Stops serving.
    public func stop() async {
        let task = state.withLock {
            $0.releases += 1
            return $0.task
        }
        task?.cancel()
        _ = await task?.result
    }

    /// Returns when the server has stopped (on `stop()`, or SIGTERM / SIGINT, which the
    /// server treats as a request to shut down).
    public func wait() async {
        let task = state.withLock { $0.task }
        _ = await task?.result
    }

    /// Makes the next `times` content requests (for `path`, or any file when nil) fail with
    /// `fault`. 429 and 503 hit the resolve request; the others hit the bytes.
    public func inject(_ fault: Fault, path: String? = nil, times: Int = 1) {
        state.withLock { $0.faults.append(Injected(fault: fault, path: path, remaining: times)) }
    }

    /// Removes every fault not yet used and lets held bodies go on.
    public func clearFaults() {
        state.withLock {
            $0.faults.removeAll()
            $0.releases += 1
        }
    }

    /// Body bytes sent so far for `path` (of any repository).
    public func bytesServed(_ path: String) -> Int { state.withLock { $0.served[path] ?? 0 } }

    /// Bodies of `path` being written now: a body counts from its first byte until its last
    /// is written or its connection fails.
    public func bodiesSending(_ path: String) -> Int { state.withLock { $0.sending[path] ?? 0 } }

    /// Every request so far, as `METHOD /path`.
    public var requestLog: [String] { state.withLock { $0.requests } }

    /// Where each ranged GET for the bytes of `path` started, in order.
    public func rangeStarts(_ path: String) -> [Int] { state.withLock { $0.rangeStarts[path] ?? [] } }

    /// Forgets the counters and the log.
    public func resetCounters() {
        state.withLock {
            $0.served.removeAll()
            $0.requests.removeAll()
            $0.rangeStarts.removeAll()
        }
    }

    static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    static func digests(_ content: File.Content) throws -> (Int, String, String) {
        switch content {
        case .data(let data):
            var sha1 = Insecure.SHA1()
            sha1.update(data: Data("blob \(data.count)\u{0}".utf8))
            sha1.update(data: data)
            return (data.count, hex(SHA256.hash(data: data)), hex(sha1.finalize()))
        case .file(let url):
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            var sha256 = SHA256()
            var size = 0
            while let chunk = try handle.read(upToCount: 8 << 20), !chunk.isEmpty {
                sha256.update(data: chunk)
                size += chunk.count
            }
            // Files on disk are LFS files, named by sha256 only.
            return (size, hex(sha256.finalize()), String(repeating: "0", count: 40))
        }
    }
}
