import Foundation
import HearthHub
import HearthTestSupport
import HubEmulator
import Testing

/// Deterministic bytes for test files.
func testBytes(_ count: Int, seed: UInt64) -> Data {
    var generator = SplitMix64(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        var value = generator.next()
        for _ in 0..<8 where index < count {
            bytes[index] = UInt8(truncatingIfNeeded: value)
            value >>= 8
            index += 1
        }
    }
    return Data(bytes)
}

/// An emulated Hub with a fresh cache, and a downloader that retries fast.
final class HubFixture: @unchecked Sendable {
    let emulator: HubEmulator
    let directory: TemporaryDirectory
    var cache: HFCache { HFCache(root: directory.url.appendingPathComponent("hub")) }

    init(_ repos: [HubEmulator.Repo], treePageSize: Int = 1000) async throws {
        emulator = try HubEmulator(repos: repos, treePageSize: treePageSize)
        directory = try TemporaryDirectory()
        try await emulator.start()
    }

    func environment(token: String? = nil, offline: Bool = false) -> HubEnvironment {
        HubEnvironment(endpoint: emulator.endpoint, token: token, offline: offline, cacheDirectory: cache.root)
    }

    /// A client of the emulator that waits minutes for a byte: the emulator shares this
    /// process's threads with every other suite, and a shorter read timeout fired on a busy
    /// machine and turned into retries the tests then counted.
    func client(token: String? = nil, offline: Bool = false, readTimeout: Duration = .seconds(300)) -> HubClient {
        HubClient(environment: environment(token: token, offline: offline), retry: Self.fastRetry, readTimeout: readTimeout)
    }

    func downloader(token: String? = nil, offline: Bool = false, connections: Int = 4, bytesPerConnection: Int = 1 << 20) -> SnapshotDownloader {
        SnapshotDownloader(client: client(token: token, offline: offline), cache: cache,
                           options: DownloadOptions(maximumConnectionsPerFile: connections, bytesPerConnection: bytesPerConnection,
                                                    retry: Self.fastRetry))
    }

    static let fastRetry = RetryPolicy(attempts: 5, baseDelay: .milliseconds(20), maximumDelay: .milliseconds(200))

    func stop() async { await emulator.stop() }
}

/// Collects progress reports from any thread.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var reports: [DownloadProgress] = []

    func add(_ report: DownloadProgress) {
        lock.lock()
        reports.append(report)
        lock.unlock()
    }

    var all: [DownloadProgress] {
        lock.lock()
        defer { lock.unlock() }
        return reports
    }
}

/// The standard small repository: two LFS files (one nested), two plain ones.
func sampleRepo(_ id: String = "test-org/tiny-model", access: HubEmulator.Access = .open) -> HubEmulator.Repo {
    HubEmulator.Repo(id, files: [
        .init("config.json", Data(#"{"architectures": ["LlamaForCausalLM"]}"#.utf8)),
        .init("README.md", Data("# tiny\n".utf8)),
        .init("tiny-Q4_K_M.gguf", testBytes(3 << 20 + 12345, seed: 1)),
        .init("nested/deeper/weights.safetensors", testBytes(700_001, seed: 2)),
    ], access: access, downloads: 42, likes: 3, tags: ["gguf", "license:apache-2.0"])
}
