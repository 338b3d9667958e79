import Crypto
import Foundation
import Hearth
import HearthHub
import HearthTestSupport
import HubEmulator
import Testing

/// The Python huggingface_hub package, run against the emulator and against caches Hearth
/// wrote. Skipped where Python or the package is missing, except in CI (CI set), where
/// `.ci/run` installs it and a missing package is a failure.
enum PythonHub {
    static let available = Python.canImport("huggingface_hub")

    static var enabled: Bool { available || ProcessInfo.processInfo.environment["CI"] != nil }

    /// Runs `script` with `arguments`; returns standard output, or fails the test with the
    /// script's errors.
    static func run(_ script: String, _ arguments: [String], hub: HubFixture, extra: [String: String] = [:]) async throws -> String {
        try #require(available, "python3 with huggingface_hub is missing: pip install huggingface_hub (.ci/run does)")
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script] + arguments,
                              environment: childEnvironment(hub, extra: ["HF_HUB_DISABLE_PROGRESS_BARS": "1"].merging(extra) { a, _ in a }),
                              directory: hub.directory)
        let status = try await child.wait()
        try #require(status == 0, "python failed: \(child.errorText)")
        return child.outputText
    }
}

/// A tiny random llama model in GGUF, small enough to serve in a test and real enough to load.
func tinyLlamaGGUF() throws -> Data {
    var model = TinyLlama()
    (model.embedding, model.layers, model.heads, model.kvHeads, model.feedForward) = (32, 1, 2, 1, 64)
    (model.vocabulary, model.contextLength, model.seed) = (8, 128, 5)
    return try model.data()
}

@Suite("Interop with Python's huggingface_hub", .serialized, .enabled(if: PythonHub.enabled, "python3 with huggingface_hub is missing: pip install huggingface_hub"))
struct InteropTests {
    @Test("huggingface_hub downloads from the emulator; Hearth lists and loads what it wrote")
    func pythonWritesHearthReads() async throws {
        let repo = HubEmulator.Repo("test-org/tiny-llama-GGUF", files: [
            .init("tiny-llama-F32.gguf", try tinyLlamaGGUF()),
            .init("config.json", Data(#"{"model_type": "llama"}"#.utf8)),
            .init("docs/notes/readme.txt", Data("nested\n".utf8)),
        ], tags: ["gguf"])
        // Small tree pages, so Python follows the Link headers as it does on the Hub.
        let hub = try await HubFixture([repo], treePageSize: 2)
        defer { Task { await hub.stop() } }
        let script = """
            import sys
            from huggingface_hub import snapshot_download
            print(snapshot_download(sys.argv[1], cache_dir=sys.argv[2]))
            """
        let printed = try await PythonHub.run(script, [repo.id, hub.cache.root.path], hub: hub)
        let snapshot = printed.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(snapshot.hasSuffix("models--test-org--tiny-llama-GGUF/snapshots/\(repo.commit)"))

        let scanned = try #require(hub.cache.cachedRepo(repo.id))
        #expect(scanned.revisions.first?.refs == ["main"])
        #expect(scanned.revisions.first?.files.map(\.path) == ["config.json", "docs/notes/readme.txt", "tiny-llama-F32.gguf"])

        // Hearth finds it offline, through the cache alone.
        let offline = HubEnvironment(endpoint: URL(string: "http://127.0.0.1:9")!, offline: true, cacheDirectory: hub.cache.root)
        let hearth = Hearth(configuration: .init(hub: offline))
        #expect(try hearth.cachedModelFile(repo.id)?.lastPathComponent == "tiny-llama-F32.gguf")
        let model = try await hearth.loadModel(repo.id)
        #expect(model.contextLength == 128)
        #expect(CacheUsage(cache: hearth.cache).entries()[repo.id]?.lastUsed != nil)
        // And a pull of it is satisfied from the cache without a request.
        hub.emulator.resetCounters()
        let again = try await SnapshotDownloader(client: HubClient(environment: offline), cache: hub.cache).download(repo.id) { _ in }
        #expect(again.url.path == snapshot)
        #expect(hub.emulator.requestLog.isEmpty)
    }

    @Test("Hearth pulls; huggingface_hub reads the cache offline and scans it clean")
    func hearthWritesPythonReads() async throws {
        let repo = sampleRepo()
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let snapshot = try await hub.downloader().download(repo.id) { _ in }
        let script = """
            import hashlib, json, sys
            from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download
            repo, cache = sys.argv[1], sys.argv[2]
            info = scan_cache_dir(cache)
            nested = hf_hub_download(repo, "nested/deeper/weights.safetensors", cache_dir=cache, local_files_only=True)
            print(json.dumps({
                "warnings": [str(w) for w in info.warnings],
                "incomplete": [str(f.file_path) for f in getattr(info, "incomplete_files", [])],
                "repos": [{"id": r.repo_id, "size": r.size_on_disk,
                           "revisions": [{"commit": v.commit_hash, "refs": sorted(v.refs),
                                          "files": sorted(str(f.file_path.relative_to(v.snapshot_path)) for f in v.files)}
                                         for v in r.revisions]} for r in info.repos],
                "nested_sha256": hashlib.sha256(open(nested, "rb").read()).hexdigest(),
                "snapshot": snapshot_download(repo, cache_dir=cache, local_files_only=True),
            }))
            """
        let printed = try await PythonHub.run(script, [repo.id, hub.cache.root.path], hub: hub, extra: ["HF_HUB_OFFLINE": "1"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(printed.utf8)) as? [String: Any])
        #expect((report["warnings"] as? [String])?.isEmpty == true, "\(report["warnings"] ?? "")")
        #expect((report["incomplete"] as? [String])?.isEmpty == true)
        let repos = report["repos"] as? [[String: Any]] ?? []
        #expect(repos.count == 1)
        #expect(repos.first?["id"] as? String == repo.id)
        #expect(repos.first?["size"] as? Int == hub.cache.cachedRepo(repo.id)?.size)
        let revision = (repos.first?["revisions"] as? [[String: Any]])?.first
        #expect(revision?["commit"] as? String == repo.commit)
        #expect(revision?["refs"] as? [String] == ["main"])
        #expect(revision?["files"] as? [String] == ["README.md", "config.json", "nested/deeper/weights.safetensors", "tiny-Q4_K_M.gguf"])
        #expect(report["nested_sha256"] as? String == SHA256.hash(data: testBytes(700_001, seed: 2)).map { String(format: "%02x", $0) }.joined())
        #expect(report["snapshot"] as? String == snapshot.url.path)
    }
}
