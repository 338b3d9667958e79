import Crypto
import Foundation
import HearthCore
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a pull uses the network.
public struct DownloadOptions: Sendable, Equatable {
    /// Most connections for one file.
    public var maximumConnectionsPerFile: Int
    /// A file gets one connection per this many bytes (so small files use one), up to the
    /// maximum.
    public var bytesPerConnection: Int
    /// How failed requests are retried.
    public var retry: RetryPolicy
    /// How often, at most, the progress of a file is saved for a resume.
    public var checkpointInterval: Duration

    /// Options; the defaults suit both a fast link and a flaky one.
    public init(maximumConnectionsPerFile: Int = 4, bytesPerConnection: Int = 16 << 20, retry: RetryPolicy = RetryPolicy(),
                checkpointInterval: Duration = .milliseconds(100)) {
        self.maximumConnectionsPerFile = min(16, max(1, maximumConnectionsPerFile))
        self.bytesPerConnection = max(1 << 20, bytesPerConnection)
        self.retry = retry
        self.checkpointInterval = checkpointInterval
    }

    /// Connections for a file with `remaining` bytes to fetch.
    func connections(remaining: Int) -> Int {
        min(maximumConnectionsPerFile, max(1, (remaining + bytesPerConnection - 1) / bytesPerConnection))
    }
}

/// The digest a blob must have: sha256 for LFS files, git's blob sha1 (over `blob <size>\0` and
/// the content) for the others.
enum ExpectedDigest: Sendable, Equatable {
    case sha256(String)
    case gitSHA1(String)

    /// The digest the Hub's etag stands for, nil when it is neither kind.
    init?(etag: String) {
        let lower = etag.lowercased()
        guard lower.allSatisfy(\.isHexDigit) else { return nil }
        switch lower.count {
        case 64: self = .sha256(lower)
        case 40: self = .gitSHA1(lower)
        default: return nil
        }
    }

    var hex: String {
        switch self {
        case .sha256(let hex), .gitSHA1(let hex): return hex
        }
    }
}

/// The byte ranges of a partial file that are on disk, saved beside it so that a pull killed
/// at any moment resumes without fetching them again.
struct RangeLedger: Codable, Equatable {
    var size: Int
    var etag: String
    /// Sorted, disjoint, non-adjacent half-open ranges.
    var done: [[Int]] = []

    mutating func add(_ start: Int, _ end: Int) {
        guard end > start else { return }
        var merged: [[Int]] = []
        var lower = start, upper = end
        var placed = false
        for range in done {
            if range[1] < lower {
                merged.append(range)
            } else if range[0] > upper {
                if !placed {
                    merged.append([lower, upper])
                    placed = true
                }
                merged.append(range)
            } else {
                lower = min(lower, range[0])
                upper = max(upper, range[1])
            }
        }
        if !placed { merged.append([lower, upper]) }
        done = merged
    }

    var completedBytes: Int { done.reduce(0) { $0 + $1[1] - $1[0] } }

    /// Bytes from 0 that are all on disk.
    var prefix: Int { done.first.map { $0[0] == 0 ? $0[1] : 0 } ?? 0 }

    /// What is still missing.
    var missing: [Range<Int>] {
        var result: [Range<Int>] = []
        var position = 0
        for range in done {
            if range[0] > position { result.append(position..<range[0]) }
            position = max(position, range[1])
        }
        if position < size { result.append(position..<size) }
        return result
    }

    /// What is missing, cut in order into pieces of at most `chunk` bytes.
    func chunks(of chunk: Int) -> [Range<Int>] {
        missing.flatMap { range in
            stride(from: range.lowerBound, to: range.upperBound, by: chunk).map { $0..<min($0 + chunk, range.upperBound) }
        }
    }
}

/// One blob fetched into the cache: ranged requests in parallel into `<etag>.hearth.incomplete`,
/// progress saved in `<etag>.hearth-ranges.incomplete`, digest computed over the file in order
/// while later parts are still arriving, and a rename into `blobs/<etag>` only once it matches.
/// Hearth's partial files have names of their own because they have holes: huggingface_hub
/// resumes its `<etag>.incomplete` by appending, which would corrupt them.
struct BlobDownload: Sendable {
    let http: HubHTTP
    let url: URL
    let repo: String
    let path: String
    let size: Int
    let etag: String
    let digest: ExpectedDigest
    let blob: URL
    let options: DownloadOptions
    let progress: ProgressTracker

    var partial: URL { blob.deletingLastPathComponent().appendingPathComponent(etag + ".hearth.incomplete") }
    var ledgerURL: URL { blob.deletingLastPathComponent().appendingPathComponent(etag + ".hearth-ranges.incomplete") }

    /// Bytes of this blob already on disk from an earlier, interrupted pull.
    static func resumableBytes(partial: URL, ledger: URL, size: Int, etag: String) -> Int {
        guard let saved = loadLedger(ledger), saved.size == size, saved.etag == etag,
              let attributes = try? FileManager.default.attributesOfItem(atPath: partial.path),
              (attributes[.size] as? Int) == size else { return 0 }
        return saved.completedBytes
    }

    private static func loadLedger(_ url: URL) -> RangeLedger? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return try? JSONDecoder().decode(RangeLedger.self, from: data)
    }

    /// Fetches, verifies and moves the blob into place. Call with the blob's lock held.
    func run() async throws {
        var checksumFailures = 0
        while true {
            do {
                try await transferAndVerify()
                return
            } catch let error as HearthError {
                guard case .checksumMismatch = error else { throw error }
                // A corrupt file is never kept: start it over, a few times.
                discardPartial()
                checksumFailures += 1
                if checksumFailures >= options.retry.attempts { throw error }
                try await Task.sleep(for: options.retry.delay(beforeRetry: checksumFailures - 1, after: error))
            }
        }
    }

    func discardPartial() {
        try? FileManager.default.removeItem(at: partial)
        try? FileManager.default.removeItem(at: ledgerURL)
    }

    private func transferAndVerify() async throws {
        let fileManager = FileManager.default
        var ledger = RangeLedger(size: size, etag: etag)
        if Self.resumableBytes(partial: partial, ledger: ledgerURL, size: size, etag: etag) > 0, let saved = Self.loadLedger(ledgerURL) {
            ledger = saved
        } else {
            discardPartial()
        }
        let fd = open(partial.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HearthError.resourceUnavailable("Cannot create \(partial.path) (errno \(errno))") }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else {
            throw HearthError.resourceUnavailable("Cannot size \(partial.path) to \(size) bytes (errno \(errno))")
        }
        progress.add(ledger.completedBytes, transferred: false)
        let counted = ByteCounter(ledger.completedBytes)

        let shared = SharedLedger(ledger: ledger, url: ledgerURL, interval: options.checkpointInterval)
        // Connections take chunks in file order from one queue, so the in-order prefix (and
        // with it the hash) keeps up with the download instead of waiting for a first quarter.
        let remaining = size - ledger.completedBytes
        let connections = options.connections(remaining: remaining)
        let chunkSize = min(64 << 20, max(options.bytesPerConnection / 4, remaining / (connections * 8)))
        let queue = ChunkQueue(ledger.chunks(of: chunkSize), connections: connections)
        let location = ResolvedLocation(url)
        let actual: String
        do {
            actual = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask { try await hashInOrder(fd: fd, ledger: shared) }
                for index in 0..<min(connections, queue.count) {
                    group.addTask {
                        // A connection whose number is no longer allowed stops taking chunks;
                        // the others finish the queue.
                        while index < queue.allowedConnections, let range = queue.next() {
                            try await fetch(range, fd: fd, ledger: shared, counted: counted, location: location, queue: queue)
                        }
                        return nil
                    }
                }
                var digest: String?
                for try await result in group where result != nil { digest = result }
                guard let digest else { throw CancellationError() }
                return digest
            }
        } catch {
            shared.checkpoint()
            throw error
        }
        shared.checkpoint()
        progress.update { $0.phase = .verifying }
        guard actual == digest.hex else {
            progress.subtract(counted.value)
            throw HearthError.checksumMismatch(file: path, expected: digest.hex, actual: actual)
        }
        try? fileManager.removeItem(at: blob)
        guard rename(partial.path, blob.path) == 0 else {
            throw HearthError.resourceUnavailable("Cannot move the finished download to \(blob.path) (errno \(errno))")
        }
        try? fileManager.removeItem(at: ledgerURL)
    }

    /// Streams one range into the file, retrying from wherever the last try stopped. Tries that
    /// made progress do not count against the retry budget, so a long download over a flaky
    /// link still finishes.
    private func fetch(_ range: Range<Int>, fd: Int32, ledger: SharedLedger, counted: ByteCounter, location: ResolvedLocation,
                       queue: ChunkQueue) async throws {
        var offset = range.lowerBound
        var failures = 0
        while offset < range.upperBound {
            let start = offset
            do {
                try await fetchOnce(from: &offset, to: range.upperBound, fd: fd, ledger: ledger, counted: counted, location: location)
            } catch let error as HearthError where error.isRetryable {
                location.forget()
                switch error {
                case .hubRateLimited, .hubServerError: queue.slowDown()
                default: break
                }
                if offset > start { failures = 0 }
                failures += 1
                guard failures < options.retry.attempts else { throw error }
                try await Task.sleep(for: options.retry.delay(beforeRetry: failures - 1, after: error))
            }
        }
    }

    private func fetchOnce(from offset: inout Int, to end: Int, fd: Int32, ledger: SharedLedger, counted: ByteCounter,
                           location: ResolvedLocation) async throws {
        let start = location.current
        let (head, body) = try await http.send(.GET, start, headers: [("Range", "bytes=\(offset)-\(end - 1)"), ("Accept-Encoding", "identity")])
        if start != url, !(200..<300).contains(head.status) {
            // A remembered storage URL may have expired: go back through the Hub.
            _ = try? await body.collect(upTo: 1 << 16)
            location.forget()
            throw HearthError.networkFailure("the storage URL answered HTTP \(head.status)")
        }
        var skip = 0
        switch head.status {
        case 206:
            location.remember(head.url)
            if let contentRange = head.header("Content-Range"), !contentRange.hasPrefix("bytes \(offset)-") {
                throw HearthError.hubInvalidResponse("Content-Range \(contentRange) for a request from byte \(offset)")
            }
        case 200:
            // The server ignored the range: read the whole body, keep only the part asked for.
            skip = offset
        default:
            _ = try? await body.collect(upTo: 1 << 16)
            try HubHTTP.check(head, repo: repo, file: path)
            throw HearthError.hubInvalidResponse("HTTP \(head.status) for \(path)")
        }
        do {
            for try await var buffer in body {
                if skip > 0 {
                    let drop = min(skip, buffer.readableBytes)
                    buffer.moveReaderIndex(forwardBy: drop)
                    skip -= drop
                }
                let count = min(buffer.readableBytes, end - offset)
                guard count > 0 else { continue }
                try write(buffer.readableBytesView.prefix(count), at: offset, fd: fd)
                ledger.add(offset, offset + count)
                offset += count
                counted.add(count)
                progress.add(count)
            }
        } catch {
            throw HubHTTP.networkError(error, url: url)
        }
        if offset < end {
            throw HearthError.networkFailure("the connection ended \(end - offset) bytes early")
        }
    }

    private func write(_ bytes: ByteBufferView, at offset: Int, fd: Int32) throws {
        try bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let written = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw HearthError.resourceUnavailable("Cannot write \(partial.path) (errno \(errno))")
                }
                done += written
            }
        }
    }

    /// Hashes the file from its start as the bytes arrive (reading back from the page cache),
    /// so verifying adds little after the last byte lands.
    private func hashInOrder(fd: Int32, ledger: SharedLedger) async throws -> String {
        var sha256 = SHA256()
        var sha1 = Insecure.SHA1()
        let isSHA1: Bool
        if case .gitSHA1 = digest {
            isSHA1 = true
            sha1.update(data: Data("blob \(size)\u{0}".utf8))
        } else {
            isSHA1 = false
        }
        let bufferSize = 4 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize, alignment: 64)
        defer { buffer.deallocate() }
        var hashed = 0
        while hashed < size {
            let available = await ledger.waitForPrefix(beyond: hashed)
            guard available > hashed else { throw CancellationError() }
            while hashed < available {
                let count = pread(fd, buffer.baseAddress!, min(bufferSize, available - hashed), off_t(hashed))
                guard count > 0 else {
                    if count < 0, errno == EINTR { continue }
                    throw HearthError.resourceUnavailable("Cannot read back \(partial.path) (errno \(errno))")
                }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                if isSHA1 { sha1.update(bufferPointer: chunk) } else { sha256.update(bufferPointer: chunk) }
                hashed += count
            }
        }
        let bytes: [UInt8] = isSHA1 ? Array(sha1.finalize()) : Array(sha256.finalize())
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// The range ledger of a blob being fetched, shared by its connections: saved to disk at most
/// every `interval`, and watched by the hasher for the in-order prefix to grow.
final class SharedLedger: Sendable {
    private struct State {
        var ledger: RangeLedger
        var lastSave: ContinuousClock.Instant
        var dirty = false
        var waiter: CheckedContinuation<Int, Never>?
        var waitingBeyond = 0
    }

    private let state: Mutex<State>
    private let url: URL
    private let interval: Duration

    init(ledger: RangeLedger, url: URL, interval: Duration) {
        state = Mutex(State(ledger: ledger, lastSave: .now))
        self.url = url
        self.interval = interval
    }

    func add(_ start: Int, _ end: Int) {
        let now = ContinuousClock.now
        let (resume, prefix, save): (CheckedContinuation<Int, Never>?, Int, RangeLedger?) = state.withLock { state in
            state.ledger.add(start, end)
            state.dirty = true
            var resume: CheckedContinuation<Int, Never>?
            let prefix = state.ledger.prefix
            if let waiter = state.waiter, prefix > state.waitingBeyond {
                resume = waiter
                state.waiter = nil
            }
            var save: RangeLedger?
            if now - state.lastSave >= interval {
                state.lastSave = now
                state.dirty = false
                save = state.ledger
            }
            return (resume, prefix, save)
        }
        if let save { write(save) }
        resume?.resume(returning: prefix)
    }

    /// Saves the ledger now if it changed since the last save.
    func checkpoint() {
        let save: RangeLedger? = state.withLock { state in
            guard state.dirty else { return nil }
            state.dirty = false
            state.lastSave = .now
            return state.ledger
        }
        if let save { write(save) }
    }

    /// Returns the in-order prefix once it is longer than `position`; returns `position` at
    /// once when the task is cancelled.
    func waitForPrefix(beyond position: Int) async -> Int {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: Int? = state.withLock { state in
                    if state.ledger.prefix > position || Task.isCancelled {
                        return Task.isCancelled ? position : state.ledger.prefix
                    }
                    state.waiter = continuation
                    state.waitingBeyond = position
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Int, Never>? = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: position)
        }
    }

    /// Writes atomically; files may be written out of order by two connections, but each is a
    /// true (if slightly old) account, and an old account only costs a re-fetch.
    private func write(_ ledger: RangeLedger) {
        guard let data = try? JSONEncoder().encode(ledger) else { return }
        try? data.write(to: url, options: .atomic)
    }
}

/// Bytes counted from several connections.
final class ByteCounter: Sendable {
    private let count: Mutex<Int>

    init(_ initial: Int) { count = Mutex(initial) }

    func add(_ bytes: Int) { count.withLock { $0 += bytes } }

    var value: Int { count.withLock { $0 } }
}

/// Ranges still to fetch, handed out in file order, and how many connections may take them:
/// a server that answers 429 or 5xx gets one connection fewer each time, down to one.
final class ChunkQueue: Sendable {
    private struct State {
        var ranges: ArraySlice<Range<Int>>
        var allowed: Int
    }

    private let state: Mutex<State>
    let count: Int

    init(_ ranges: [Range<Int>], connections: Int) {
        state = Mutex(State(ranges: ranges[...], allowed: connections))
        count = ranges.count
    }

    func next() -> Range<Int>? { state.withLock { $0.ranges.popFirst() } }

    var allowedConnections: Int { state.withLock { $0.allowed } }

    func slowDown() { state.withLock { $0.allowed = max(1, $0.allowed - 1) } }
}

/// Where a file's bytes last came from after redirects (a signed storage URL), so further
/// chunks skip the round trip through the Hub; forgotten after any failure.
final class ResolvedLocation: Sendable {
    private let original: URL
    private let resolved = Mutex<URL?>(nil)

    init(_ url: URL) { original = url }

    var current: URL { resolved.withLock { $0 } ?? original }

    func remember(_ url: URL) { resolved.withLock { $0 = url } }

    func forget() { resolved.withLock { $0 = nil } }
}
