import Foundation
import HearthHub
import HearthTestSupport
import HubEmulator
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The environment for a child that talks to `hub`: the caller's, without any Hub settings of
/// its own, plus the emulator's endpoint and the fixture's cache.
func childEnvironment(_ hub: HubFixture, extra: [String: String] = [:]) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HF_") && $0.key != "HUGGING_FACE_HUB_TOKEN" }
    environment["HF_ENDPOINT"] = hub.emulator.endpoint.absoluteString
    environment["HF_HOME"] = hub.directory.url.appendingPathComponent("hf-home").path
    environment["HF_HUB_CACHE"] = hub.cache.root.path
    environment["HF_HUB_DISABLE_TELEMETRY"] = "1"
    // huggingface_hub waits 10 s for the emulator, which shares the test process's threads
    // with every other suite: minutes instead.
    environment["HF_HUB_ETAG_TIMEOUT"] = "600"
    environment["HF_HUB_DOWNLOAD_TIMEOUT"] = "600"
    environment["NO_PROXY"] = "*"
    for (key, value) in extra { environment[key] = value }
    return environment
}

/// The bytes a pull in progress has saved, as its range ledgers on disk say.
private func savedBytes(_ cache: HFCache) -> Int {
    struct Ledger: Decodable { let done: [[Int]] }
    let enumerator = FileManager.default.enumerator(at: cache.root, includingPropertiesForKeys: nil)
    var saved = 0
    while let url = enumerator?.nextObject() as? URL {
        guard url.lastPathComponent.hasSuffix(".hearth-ranges.incomplete"), let data = try? Data(contentsOf: url),
              let ledger = try? JSONDecoder().decode(Ledger.self, from: data) else { continue }
        saved += ledger.done.reduce(0) { $0 + $1[1] - $1[0] }
    }
    return saved
}

@Suite("hearth pull as a process", .serialized)
struct PullProcessTests {
    @Test("kill -9 at about half, then the resumed pull fetches at most 60% again")
    func killAndResume() async throws {
        let size = 16 << 20
        let repo = HubEmulator.Repo("test-org/killed", files: [.init("model-Q4_K_M.gguf", testBytes(size, seed: 21))], tags: ["gguf"])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        // The bodies hold at half the file until the faults are cleared, so the kill comes at
        // about half however slow the machine: once the pull has saved that half's ranges.
        hub.emulator.inject(.hold(afterServed: size / 2), times: 16)
        let environment = childEnvironment(hub)
        let first = try Child(TestFiles.hearthBinary, ["pull", repo.id], environment: environment, directory: hub.directory)
        first.killWhenTestsEnd()
        try await waitUntil("half the file saved by the pull") {
            try #require(first.isRunning, "hearth pull ended: \(first.errorText)")
            return savedBytes(hub.cache) >= size / 2
        }
        first.signal(SIGKILL)
        _ = try await first.wait()
        let servedBeforeKill = hub.emulator.bytesServed("model-Q4_K_M.gguf")
        #expect(servedBeforeKill >= size / 2 && servedBeforeKill < size)
        #expect(first.ended == .signaled(SIGKILL))
        let entry = hub.cache.repoDirectory(repo.id).appendingPathComponent("snapshots/\(repo.commit)/model-Q4_K_M.gguf")
        #expect(!FileManager.default.fileExists(atPath: entry.path))

        // The held bodies go on into the killed pull's connections until they find them closed;
        // what they write there is not fetched by the next pull.
        hub.emulator.clearFaults()
        try await waitUntil("the killed pull's bodies to end") { hub.emulator.bodiesSending("model-Q4_K_M.gguf") == 0 }
        let servedBeforeResume = hub.emulator.bytesServed("model-Q4_K_M.gguf")
        let second = try Child(TestFiles.hearthBinary, ["pull", repo.id, "--json"], environment: environment, directory: hub.directory)
        let status = try await second.wait()
        #expect(status == 0, "\(second.errorText)")
        let again = hub.emulator.bytesServed("model-Q4_K_M.gguf") - servedBeforeResume
        #expect(Double(again) <= 0.6 * Double(size),
                "fetched \(again) of \(size) bytes again (\(servedBeforeKill) served before the kill, \(servedBeforeResume) before the resumed pull)")
        #expect(try Data(contentsOf: entry) == testBytes(size, seed: 21))
        let lines = second.outputText.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.last?["event"] as? String == "done")
        #expect(lines.contains { $0["phase"] as? String == "verifying" })
    }

    @Test("two hearth processes pulling the same file share one download")
    func twoProcesses() async throws {
        let size = 4 << 20
        let repo = HubEmulator.Repo("test-org/shared-GGUF", files: [.init("shared-Q4_0.gguf", testBytes(size, seed: 51))], tags: ["gguf"])
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        hub.emulator.inject(.trickle(bytesPerSecond: 8 << 20), times: 16)
        let environment = childEnvironment(hub)
        let first = try Child(TestFiles.hearthBinary, ["pull", repo.id], environment: environment, directory: hub.directory)
        let second = try Child(TestFiles.hearthBinary, ["pull", repo.id], environment: environment, directory: hub.directory)
        let statuses = (try await first.wait(), try await second.wait())
        #expect(statuses == (0, 0), "\(first.errorText)\n\(second.errorText)")
        #expect(first.outputText == second.outputText)
        #expect(hub.emulator.bytesServed("shared-Q4_0.gguf") == size)
        let file = hub.cache.snapshot(repo.id)!.appendingPathComponent("shared-Q4_0.gguf")
        #expect(try Data(contentsOf: file) == testBytes(size, seed: 51))
    }

    @Test("the CLI reads the token file under HF_HOME, and says what to do without it")
    func tokenFile() async throws {
        let repo = sampleRepo("gated-org/licensed-GGUF", access: .gated(token: "hf_from_file"))
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let environment = childEnvironment(hub)
        let denied = try Child(TestFiles.hearthBinary, ["pull", repo.id, "--json"], environment: environment, directory: hub.directory)
        #expect(try await denied.wait() == 1)
        #expect(denied.errorText.contains("HF_TOKEN"))
        let event = try JSONSerialization.jsonObject(with: Data(denied.outputText.utf8)) as? [String: Any]
        #expect(event?["event"] as? String == "error")
        #expect(event?["category"] as? String == "network")

        let home = URL(fileURLWithPath: environment["HF_HOME"]!)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try Data("hf_from_file\n".utf8).write(to: home.appendingPathComponent("token"))
        let allowed = try Child(TestFiles.hearthBinary, ["pull", "\(repo.id):Q4_K_M"], environment: environment, directory: hub.directory)
        #expect(try await allowed.wait() == 0, "\(allowed.errorText)")
        #expect(allowed.outputText.hasSuffix("tiny-Q4_K_M.gguf\n"))
    }

    @Test("pull, ls, show, rm and prune through the CLI, with --json")
    func cacheCommands() async throws {
        let small = HubEmulator.Repo("test-org/small-GGUF", files: [.init("small-Q8_0.gguf", testBytes(300_000, seed: 31)),
                                                                  .init("small-Q4_K_M.gguf", testBytes(200_000, seed: 32))], tags: ["gguf"])
        let other = HubEmulator.Repo("test-org/other-GGUF", files: [.init("other-Q4_0.gguf", testBytes(100_000, seed: 33))], downloads: 9, tags: ["gguf"])
        let hub = try await HubFixture([small, other])
        defer { Task { await hub.stop() } }
        let environment = childEnvironment(hub)
        func hearth(_ arguments: String...) async throws -> Child {
            let child = try Child(TestFiles.hearthBinary, arguments, environment: environment, directory: hub.directory)
            _ = try await child.wait()
            return child
        }
        func json(_ child: Child) -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(child.outputText.utf8))) as? [String: Any] ?? [:]
        }

        let search = try await hearth("search", "GGUF", "--gguf", "--json")
        #expect(search.ended?.status == 0)
        let found = (try? JSONSerialization.jsonObject(with: Data(search.outputText.utf8))) as? [[String: Any]]
        #expect(found?.map { $0["id"] as? String } == ["test-org/other-GGUF", "test-org/small-GGUF"])

        let pullQuant = try await hearth("pull", "test-org/small-GGUF:Q8_0")
        #expect(pullQuant.ended?.status == 0, "\(pullQuant.errorText)")
        #expect(pullQuant.outputText.hasSuffix("small-Q8_0.gguf\n"))
        #expect(hub.emulator.bytesServed("small-Q4_K_M.gguf") == 0)
        #expect(try await hearth("pull", "test-org/other-GGUF").ended?.status == 0)

        let list = json(try await hearth("ls", "--json"))
        let models = list["models"] as? [[String: Any]] ?? []
        #expect(models.compactMap { $0["name"] as? String }.sorted() == ["test-org/other-GGUF", "test-org/small-GGUF"])
        #expect(list["total"] as? Int == 400_000)
        #expect(models.first { $0["name"] as? String == "test-org/small-GGUF" }?["quantizations"] as? [String] == ["Q8_0"])
        let table = try await hearth("ls")
        #expect(table.outputText.contains("test-org/small-GGUF") && table.outputText.contains("total:"))

        let show = json(try await hearth("show", "test-org/small-GGUF", "--json"))
        #expect(show["commit"] as? String == small.commit)
        #expect((show["files"] as? [[String: Any]])?.count == 2)

        let refused = try await hearth("rm", "test-org/other-GGUF")
        #expect(refused.ended?.status != 0 && refused.errorText.contains("-y"))
        let removed = json(try await hearth("rm", "test-org/other-GGUF", "-y", "--json"))
        #expect(removed["removed"] as? [String] == ["test-org/other-GGUF"])
        #expect(hub.cache.cachedRepo("test-org/other-GGUF") == nil)

        let pruned = json(try await hearth("prune", "--keep", "100K", "-y", "--json"))
        #expect(pruned["removed"] as? [String] == ["test-org/small-GGUF"])
        #expect(hub.cache.scan().isEmpty)

        let offline = try Child(TestFiles.hearthBinary, ["pull", "test-org/other-GGUF"], environment: childEnvironment(hub, extra: ["HF_HUB_OFFLINE": "1"]),
                                directory: hub.directory)
        #expect(try await offline.wait() == 1)
        #expect(offline.errorText.contains("HF_HUB_OFFLINE"))
    }
}
