import Crypto
import Foundation
import HearthCore
import HearthHub
import HearthTestSupport
import HubEmulator
import Testing

private func sha256(_ url: URL) throws -> String {
    SHA256.hash(data: try Data(contentsOf: url)).map { String(format: "%02x", $0) }.joined()
}

private func incompleteFiles(_ cache: HFCache) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: cache.root.path)
    var found: [String] = []
    while let name = enumerator?.nextObject() as? String {
        if name.hasSuffix(".incomplete") { found.append(name) }
    }
    return found
}

@Suite("Hub API against the emulator")
struct HubAPITests {
    @Test func searchInfoTreeAndSize() async throws {
        let other = HubEmulator.Repo("other-org/big-GGUF", files: [.init("big.gguf", testBytes(10_000, seed: 9))], downloads: 1000, tags: ["gguf"])
        let plain = HubEmulator.Repo("test-org/tiny-safetensors", files: [.init("a.txt", Data("a".utf8))], downloads: 5, tags: ["safetensors"])
        let hub = try await HubFixture([sampleRepo(), other, plain], treePageSize: 2)
        defer { Task { await hub.stop() } }
        let client = hub.client()

        let gguf = try await client.search("", filter: "gguf", sort: .downloads, limit: 10)
        #expect(gguf.map(\.id) == ["other-org/big-GGUF", "test-org/tiny-model"])
        #expect(try await client.search("TINY", limit: 1).count == 1)

        let info = try await client.modelInfo("test-org/tiny-model")
        #expect(info.author == "test-org")
        #expect(HFCache.isCommit(info.commit))
        #expect(info.downloads == 42 && info.likes == 3)
        #expect(info.license == "apache-2.0")
        #expect(info.pipelineTag == "text-generation")
        #expect(info.gated == .open)
        let gguf3 = try #require(info.files.first { $0.path == "tiny-Q4_K_M.gguf" })
        #expect(gguf3.size == 3 << 20 + 12345)
        #expect(gguf3.lfsSHA256 == SHA256.hash(data: testBytes(3 << 20 + 12345, seed: 1)).map { String(format: "%02x", $0) }.joined())
        let readme = try #require(info.files.first { $0.path == "README.md" })
        #expect(readme.lfsSHA256 == nil && readme.blobID?.count == 40)

        // Six entries (two of them folders) over three pages.
        let tree = try await client.listFiles("test-org/tiny-model")
        #expect(Set(tree) == Set(info.files))
        #expect(hub.emulator.requestLog.filter { $0.contains("/tree/") }.count == 3)
        #expect(try await client.downloadSize("test-org/tiny-model", patterns: ["*.gguf"]) == 3 << 20 + 12345)
        #expect(info.downloadSize(patterns: ["*.json", "nested/"]) == 700_001 + 39)
    }

    @Test func missingThingsAreNamed() async throws {
        let hub = try await HubFixture([sampleRepo()])
        defer { Task { await hub.stop() } }
        let client = hub.client()
        await #expect(throws: HearthError.hubNotFound(repo: "test-org/nope", revision: nil, file: nil)) {
            try await client.modelInfo("test-org/nope")
        }
        await #expect(throws: HearthError.hubNotFound(repo: "test-org/tiny-model", revision: "v9", file: nil)) {
            try await client.modelInfo("test-org/tiny-model", revision: "v9")
        }
        await #expect(throws: HearthError.offlineNotCached(name: "test-org/tiny-model")) {
            try await hub.client(offline: true).modelInfo("test-org/tiny-model")
        }
    }
}

@Suite("Pulls into the Hugging Face cache")
struct PullTests {
    @Test("a multi-file repo lands in the HF layout, with progress")
    func multiFilePull() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let log = ProgressLog()
        let snapshot = try await hub.downloader().download(repo.id) { log.add($0) }
        let cache = hub.cache
        let folder = cache.root.appendingPathComponent("models--test-org--tiny-model")
        #expect(snapshot.url == folder.appendingPathComponent("snapshots/\(repo.commit)"))
        #expect(try String(contentsOf: folder.appendingPathComponent("refs/main"), encoding: .utf8) == repo.commit)
        let fileManager = FileManager.default
        #expect(try fileManager.destinationOfSymbolicLink(atPath: snapshot.url(of: "config.json").path).hasPrefix("../../blobs/"))
        let nested = try fileManager.destinationOfSymbolicLink(atPath: snapshot.url(of: "nested/deeper/weights.safetensors").path)
        let weightsSHA = SHA256.hash(data: testBytes(700_001, seed: 2)).map { String(format: "%02x", $0) }.joined()
        #expect(nested == "../../../../blobs/\(weightsSHA)")
        for file in repo.files {
            guard case .data(let data) = file.content else { continue }
            #expect(try Data(contentsOf: snapshot.url(of: file.path)) == data)
        }
        #expect(incompleteFiles(cache).isEmpty)
        let blobs = try fileManager.contentsOfDirectory(atPath: folder.appendingPathComponent("blobs").path)
        #expect(blobs.count == 4)
        #expect(blobs.filter { $0.count == 64 }.count == 2 && blobs.filter { $0.count == 40 }.count == 2)
        #expect(fileManager.fileExists(atPath: cache.root.appendingPathComponent(".locks/models--test-org--tiny-model").path))

        let reports = log.all
        #expect(reports.first?.phase == .resolving)
        #expect(reports.last?.phase == .done)
        #expect(reports.last?.completedBytes == reports.last?.totalBytes)
        #expect(reports.last?.snapshot == snapshot.url)
        #expect(reports.contains { $0.phase == .verifying })
        #expect(Set(reports.map(\.fileIndex)).isSuperset(of: [1, 2, 3, 4]))
        #expect(reports.allSatisfy { $0.fileCount == 0 || $0.fileCount == 4 })

        // A second pull finds everything in place and transfers nothing.
        hub.emulator.resetCounters()
        _ = try await hub.downloader().download(repo.id) { _ in }
        #expect(hub.emulator.requestLog.allSatisfy { $0.hasPrefix("GET /api/") })

        let scanned = try #require(cache.scan().first)
        #expect(scanned.id == repo.id)
        #expect(scanned.revisions.first?.refs == ["main"])
        #expect(scanned.revisions.first?.files.count == 4)
        #expect(scanned.size == repo.files.reduce(0) { total, file in
            if case .data(let data) = file.content { return total + data.count }
            return total
        })
    }

    @Test("without sizes and hashes in the model information, each file's HEAD supplies them")
    func metadataFromHead() async throws {
        var repo = sampleRepo()
        repo.omitsFileMetadata = true
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let snapshot = try await hub.downloader().download(repo.id) { _ in }
        #expect(snapshot.files.count == 4)
        // One HEAD a file (a busy machine may see one retried, never a file without its own).
        let heads = hub.emulator.requestLog.filter { $0.hasPrefix("HEAD ") }
        #expect(heads.count >= 4 && heads.count <= 8, "\(heads)")
        for file in repo.files {
            #expect(heads.contains { $0.contains("/resolve/") && $0.hasSuffix("/" + file.path) }, "no HEAD for \(file.path) in \(heads)")
        }
        for file in repo.files {
            guard case .data(let data) = file.content else { continue }
            #expect(try Data(contentsOf: snapshot.url(of: file.path)) == data)
        }
    }

    @Test("the AsyncSequence ends with the done report; patterns pick files")
    func streamAndPatterns() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        var last: DownloadProgress?
        for try await progress in hub.downloader().download(repo.id, patterns: ["*.gguf"]) { last = progress }
        #expect(last?.phase == .done)
        #expect(last?.fileCount == 1)
        #expect(hub.emulator.bytesServed("config.json") == 0)
        let snapshot = try #require(last?.snapshot)
        #expect(try FileManager.default.contentsOfDirectory(atPath: snapshot.path) == ["tiny-Q4_K_M.gguf"])
    }

    @Test("a dropped connection is resumed from where it stopped")
    func droppedConnection() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.dropConnection(afterBytes: 300_000), path: "tiny-Q4_K_M.gguf", times: 3)
        let snapshot = try await hub.downloader(connections: 1).download(repo.id, patterns: ["*.gguf"]) { _ in }
        #expect(try sha256(snapshot.url(of: "tiny-Q4_K_M.gguf")) == SHA256.hash(data: testBytes(3 << 20 + 12345, seed: 1)).map { String(format: "%02x", $0) }.joined())
        // Each retry asked only for what was missing: the emulator counts what it handed to a
        // connection it then dropped, and some of that never arrived (more on a busy machine),
        // hence the slack; a restart from zero would cost 300 000 bytes per drop and more.
        #expect(hub.emulator.bytesServed("tiny-Q4_K_M.gguf") <= 3 << 20 + 12345 + 3 * (192 << 10))
        let starts = hub.emulator.rangeStarts("tiny-Q4_K_M.gguf")
        // One connection: every request, retries included, starts where the one before ended,
        // never earlier. (An attempt can end with nothing received: a dropped connection's
        // unread bytes are discarded, more often on a busy machine; the next then starts at
        // the same place.)
        #expect(starts.count >= 4 && starts.first == 0)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $0 <= $1 } && starts.last! > 0, "\(starts)")
    }

    @Test("corrupted bytes never reach the snapshot, and the pull recovers")
    func corruptedBody() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        // Every try corrupted: the pull fails and leaves nothing visible.
        hub.emulator.inject(.corruptBody, path: "tiny-Q4_K_M.gguf", times: 100)
        await #expect {
            try await hub.downloader(connections: 1).download(repo.id, patterns: ["*.gguf"]) { _ in }
        } throws: { error in
            if case .checksumMismatch(let file, _, _) = error as? HearthError { return file == "tiny-Q4_K_M.gguf" }
            return false
        }
        let folder = hub.cache.repoDirectory(repo.id)
        let blobs = (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("blobs").path)) ?? []
        #expect(blobs.allSatisfy { $0.hasSuffix(".incomplete") == false } && blobs.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("snapshots").path))

        // One corrupted try: the pull throws the bad copy away and succeeds.
        hub.emulator.clearFaults()
        hub.emulator.inject(.corruptBody, path: "tiny-Q4_K_M.gguf", times: 1)
        let snapshot = try await hub.downloader(connections: 1).download(repo.id, patterns: ["*.gguf"]) { _ in }
        #expect(try Data(contentsOf: snapshot.url(of: "tiny-Q4_K_M.gguf")) == testBytes(3 << 20 + 12345, seed: 1))
        #expect(incompleteFiles(hub.cache).isEmpty)
    }

    @Test("429 with Retry-After and 503 are retried")
    func statusFaults() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.tooManyRequests(retryAfter: 1), path: "config.json", times: 1)
        hub.emulator.inject(.serviceUnavailable, path: "README.md", times: 2)
        let clock = ContinuousClock()
        let start = clock.now
        let snapshot = try await hub.downloader().download(repo.id, patterns: ["*.json", "*.md"]) { _ in }
        #expect(clock.now - start >= .seconds(1))
        #expect(snapshot.files.sorted() == ["README.md", "config.json"])
        let log = hub.emulator.requestLog
        #expect(log.filter { $0.hasSuffix("/resolve/\(repo.commit)/README.md") }.count == 3)

        // On a file fetched by several connections, each 503 costs one connection.
        hub.emulator.inject(.serviceUnavailable, path: "tiny-Q4_K_M.gguf", times: 3)
        let weights = try await hub.downloader(connections: 4).download(repo.id, patterns: ["*.gguf"]) { _ in }
        #expect(try Data(contentsOf: weights.url(of: "tiny-Q4_K_M.gguf")) == testBytes(3 << 20 + 12345, seed: 1))
    }

    @Test("a slow trickle still completes, with a measured speed")
    func slowTrickle() async throws {
        let repo = HubEmulator.Repo("test-org/slow", files: [.init("slow.gguf", testBytes(400_000, seed: 5))])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.trickle(bytesPerSecond: 800_000), times: 10)
        let log = ProgressLog()
        _ = try await hub.downloader().download(repo.id) { log.add($0) }
        // A speed is measured, and never above the trickle's 800 kB/s by more than the slack of
        // its measuring window; how far below depends on how busy the machine is.
        let speeds = log.all.filter { $0.phase == .downloading }.map(\.bytesPerSecond)
        #expect(speeds.contains { $0 > 0 && $0 < 5_000_000 }, "\(speeds)")
        #expect(log.all.contains { $0.secondsRemaining != nil && $0.phase == .downloading })
    }

    @Test("auth errors say what to do; the token never leaves the Hub")
    func authentication() async throws {
        let gated = sampleRepo("gated-org/licensed", access: .gated(token: "hf_good"))
        let secret = sampleRepo("private-org/secret", access: .privateRepo(token: "hf_good"))
        let hub = try await HubFixture([gated, secret])
        defer { Task { await hub.stop() } }
        await #expect(throws: HearthError.hubAuthenticationRequired(repo: gated.id)) {
            try await hub.downloader().download(gated.id) { _ in }
        }
        await #expect(throws: HearthError.hubAccessDenied(repo: gated.id, gated: true)) {
            try await hub.downloader(token: "hf_bad").download(gated.id) { _ in }
        }
        await #expect(throws: HearthError.hubNotFound(repo: secret.id, revision: nil, file: nil)) {
            try await hub.downloader().download(secret.id) { _ in }
        }
        // The storage server refuses requests that carry a token, so this also shows it is not sent there.
        let snapshot = try await hub.downloader(token: "hf_good").download(gated.id) { _ in }
        #expect(snapshot.files.count == 4)
        #expect(try await hub.client(token: "hf_good").modelInfo(secret.id).isPrivate)
    }

    @Test("offline mode uses the cache and never touches the network")
    func offline() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        _ = try await hub.downloader().download(repo.id, patterns: ["*.json"]) { _ in }
        hub.emulator.resetCounters()
        let offline = hub.downloader(offline: true)
        let snapshot = try await offline.download(repo.id, patterns: ["*.json"]) { _ in }
        #expect(snapshot.commit == repo.commit)
        #expect(snapshot.files == ["config.json"])
        await #expect(throws: HearthError.offlineNotCached(name: "other/model")) {
            try await offline.download("other/model") { _ in }
        }
        #expect(hub.emulator.requestLog.isEmpty)
        // With the Hub unreachable, a pull falls back to the cache too.
        let unreachable = HubClient(environment: HubEnvironment(endpoint: URL(string: "http://127.0.0.1:9")!, cacheDirectory: hub.cache.root),
                                    retry: HubFixture.fastRetry)
        let fallback = try await SnapshotDownloader(client: unreachable, cache: hub.cache).download(repo.id, patterns: ["*.json"]) { _ in }
        #expect(fallback.url == snapshot.url)
    }

    @Test("disk space is checked before any byte moves")
    func diskSpace() async throws {
        var repo = sampleRepo()
        repo.claimedSizes["tiny-Q4_K_M.gguf"] = 1 << 60
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        await #expect {
            try await hub.downloader().download(repo.id) { _ in }
        } throws: { error in
            if case .insufficientDiskSpace(let needed, _, _) = error as? HearthError { return needed >= 1 << 60 }
            return false
        }
        #expect(!hub.emulator.requestLog.contains { $0.contains("/resolve/") })
    }

    @Test("file names that would escape the cache are refused")
    func unsafePaths() async throws {
        let repo = HubEmulator.Repo("evil-org/escape", files: [.init("../../../escaped.txt", Data("x".utf8))])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        await #expect(throws: HearthError.unsafeRemotePath("../../../escaped.txt")) {
            try await hub.downloader().download(repo.id) { _ in }
        }
        #expect(!FileManager.default.fileExists(atPath: hub.directory.url.appendingPathComponent("escaped.txt").path))
    }

    @Test("a cancelled pull leaves the cache consistent and resumes")
    func cancelAndResume() async throws {
        let size = 2 << 20
        let repo = HubEmulator.Repo("test-org/cancel", files: [.init("model.gguf", testBytes(size, seed: 7))])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        // The bodies hold at a third until the faults are cleared: the pull is cancelled before
        // its end however slow the machine.
        hub.emulator.inject(.hold(afterServed: size / 3), times: 4)
        let downloader = hub.downloader(connections: 2)
        let task = Task { try await downloader.download(repo.id) { _ in } }
        try await waitUntil("a third of the file served") { hub.emulator.bytesServed("model.gguf") >= size / 3 }
        task.cancel()
        _ = await task.result
        let folder = hub.cache.repoDirectory(repo.id)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("snapshots/\(repo.commit)/model.gguf").path))
        #expect(!incompleteFiles(hub.cache).isEmpty)
        // The ranges the cancelled pull saved as on disk (what the server sent but the client
        // had not read when it stopped is not among them).
        struct Ledger: Decodable { let done: [[Int]] }
        let ledgerName = try #require(incompleteFiles(hub.cache).first { $0.hasSuffix(".hearth-ranges.incomplete") })
        let ledger = try JSONDecoder().decode(Ledger.self, from: Data(contentsOf: hub.cache.root.appendingPathComponent(ledgerName)))
        let saved = ledger.done.reduce(0) { $0 + $1[1] - $1[0] }
        #expect(saved > 0)
        hub.emulator.clearFaults()
        hub.emulator.resetCounters()
        let snapshot = try await downloader.download(repo.id) { _ in }
        #expect(try Data(contentsOf: snapshot.url(of: "model.gguf")) == testBytes(size, seed: 7))
        // The resumed pull asks only for what was missing: its ranged requests start outside
        // the saved ranges. (Counting the bytes the server sends would also count what it may
        // still be sending into the cancelled connections.)
        let starts = hub.emulator.rangeStarts("model.gguf")
        #expect(!starts.isEmpty)
        for start in starts {
            #expect(!ledger.done.contains { $0[0] <= start && start < $0[1] }, "a request starts at \(start), inside \(ledger.done)")
        }
        #expect(incompleteFiles(hub.cache).isEmpty)
    }

    @Test("a blob finished by another process replaces Hearth's partial file")
    func partialFromBefore() async throws {
        let size = 2 << 20
        let data = testBytes(size, seed: 71)
        let repo = HubEmulator.Repo("test-org/finished-elsewhere", files: [.init("model.gguf", data)])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.hold(afterServed: size / 4), times: 4)
        let downloader = hub.downloader(connections: 1)
        let task = Task { try await downloader.download(repo.id) { _ in } }
        try await waitUntil("a quarter of the file served") { hub.emulator.bytesServed("model.gguf") >= size / 4 }
        task.cancel()
        _ = await task.result
        #expect(incompleteFiles(hub.cache).count == 2)
        // As huggingface_hub would leave it: the finished blob, named by its sha256.
        let sha = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
        try data.write(to: hub.cache.repoDirectory(repo.id).appendingPathComponent("blobs/\(sha)"))
        // The held body goes on into the cancelled connection until it finds it closed; then
        // the counters start again.
        hub.emulator.clearFaults()
        try await waitUntil("the cancelled download's body to end") { hub.emulator.bodiesSending("model.gguf") == 0 }
        hub.emulator.resetCounters()
        let snapshot = try await downloader.download(repo.id) { _ in }
        #expect(try Data(contentsOf: snapshot.url(of: "model.gguf")) == data)
        #expect(hub.emulator.bytesServed("model.gguf") == 0)
        #expect(incompleteFiles(hub.cache).isEmpty)
    }

    @Test("two pulls of the same file cooperate")
    func concurrentPulls() async throws {
        let size = 1 << 20
        let repo = HubEmulator.Repo("test-org/shared", files: [.init("model.gguf", testBytes(size, seed: 8))])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.trickle(bytesPerSecond: 4 << 20), times: 8)
        async let first = hub.downloader().download(repo.id) { _ in }
        async let second = hub.downloader().download(repo.id) { _ in }
        let (a, b) = try await (first, second)
        #expect(a.url == b.url)
        #expect(try Data(contentsOf: a.url(of: "model.gguf")) == testBytes(size, seed: 8))
        // One download between them: a second would serve the whole size again. On a loaded
        // machine a ranged request that stalled may be retried and serve part of it twice.
        let served = hub.emulator.bytesServed("model.gguf")
        #expect(served >= size && served < 2 * size, "\(served) bytes served for \(size)")
    }
}
