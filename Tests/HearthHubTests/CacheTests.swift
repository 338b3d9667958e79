import Foundation
import HearthCore
import HearthHub
import HearthTestSupport
import Testing

@Suite("The HF cache layout")
struct CacheTests {
    @Test func folderNames() {
        #expect(HFCache.folderName(repo: "org/name") == "models--org--name")
        #expect(HFCache.repo(folderName: "models--org--name") == "org/name")
        #expect(HFCache.repo(folderName: "datasets--org--name") == nil)
        #expect(HFCache.isCommit(String(repeating: "a1", count: 20)))
        #expect(!HFCache.isCommit("main"))
    }

    @Test func scanAndRemoveWhatPythonWouldWrite() throws {
        let directory = try TemporaryDirectory()
        let cache = HFCache(root: directory.url)
        let commit = String(repeating: "c", count: 40)
        // The layout huggingface_hub writes, built by hand.
        let repo = directory.url.appendingPathComponent("models--org--name")
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: repo.appendingPathComponent("blobs"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: repo.appendingPathComponent("refs"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: repo.appendingPathComponent("snapshots/\(commit)/sub"), withIntermediateDirectories: true)
        try Data(repeating: 1, count: 10).write(to: repo.appendingPathComponent("blobs/aaaa"))
        try Data(repeating: 2, count: 20).write(to: repo.appendingPathComponent("blobs/bbbb"))
        try fileManager.createSymbolicLink(atPath: repo.appendingPathComponent("snapshots/\(commit)/a.txt").path, withDestinationPath: "../../blobs/aaaa")
        try fileManager.createSymbolicLink(atPath: repo.appendingPathComponent("snapshots/\(commit)/sub/b.bin").path, withDestinationPath: "../../../blobs/bbbb")
        try Data(commit.utf8).write(to: repo.appendingPathComponent("refs/main"))
        try fileManager.createDirectory(at: directory.url.appendingPathComponent(".locks/models--org--name"), withIntermediateDirectories: true)

        #expect(cache.commit("org/name", revision: "main") == commit)
        #expect(cache.commit("org/name", revision: commit) == commit)
        #expect(cache.commit("org/name", revision: "v2") == nil)
        #expect(cache.snapshot("org/name")?.lastPathComponent == commit)
        let repos = cache.scan()
        #expect(repos.map(\.id) == ["org/name"])
        let revision = try #require(repos.first?.revisions.first)
        #expect(revision.refs == ["main"])
        #expect(revision.files.map(\.path) == ["a.txt", "sub/b.bin"])
        #expect(revision.files.map(\.size) == [10, 20])
        #expect(repos.first?.size == 30)

        #expect(try cache.remove("org/name") == 30)
        #expect(cache.scan().isEmpty)
        #expect(!fileManager.fileExists(atPath: directory.url.appendingPathComponent(".locks/models--org--name").path))
        #expect(throws: HearthError.modelNotFound(name: "org/name")) { try cache.remove("org/name") }
    }

    @Test func usageBookkeepingLivesBesideTheCache() throws {
        let directory = try TemporaryDirectory()
        let cache = HFCache(root: directory.url.appendingPathComponent("hub"))
        let usage = CacheUsage(cache: cache)
        #expect(usage.url.path == directory.url.appendingPathComponent("hearth/hub.usage.json").path)
        #expect(usage.entries().isEmpty)
        let then = Date(timeIntervalSince1970: 1_700_000_000)
        usage.markDownloaded("a/b", at: then)
        usage.markUsed("c/d", at: then.addingTimeInterval(60))
        #expect(usage.entries()["a/b"] == CacheUsage.Entry(lastUsed: then, downloadedAt: then))
        #expect(usage.entries()["c/d"]?.lastUsed == then.addingTimeInterval(60))
        usage.forget("a/b")
        #expect(usage.entries().keys.sorted() == ["c/d"])
    }
}

@Suite("Model names")
struct ModelReferenceTests {
    @Test func parsesWhatUsersType() throws {
        #expect(try ModelReference.parse("org/repo") == .hub(repo: "org/repo", revision: "main", quantization: nil))
        #expect(try ModelReference.parse("org/repo:Q4_K_M") == .hub(repo: "org/repo", revision: "main", quantization: "Q4_K_M"))
        #expect(try ModelReference.parse("org/repo@v1.0") == .hub(repo: "org/repo", revision: "v1.0", quantization: nil))
        #expect(try ModelReference.parse("org/repo@dev:q8_0") == .hub(repo: "org/repo", revision: "dev", quantization: "q8_0"))
        #expect(try ModelReference.parse("./models/x.gguf") == .path("./models/x.gguf"))
        #expect(try ModelReference.parse("models/x.gguf") == .path("models/x.gguf"))
        #expect(try ModelReference.parse("/abs/model") == .path("/abs/model"))
        let sha = String(repeating: "ab", count: 32)
        #expect(try ModelReference.parse("https://example.com/m.gguf#sha256=\(sha)") == .url(URL(string: "https://example.com/m.gguf")!, sha256: sha))
        #expect(try ModelReference.parse("smollm2") == .hub(repo: "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", revision: "main", quantization: "Q4_K_M"))
        #expect(try ModelReference.parse("gemma3:Q4_0") == .hub(repo: "ggml-org/gemma-3-270m-it-GGUF", revision: "main", quantization: "Q4_0"))
        #expect(throws: HearthError.modelNotFound(name: "nosuchalias")) { try ModelReference.parse("nosuchalias") }
        #expect(throws: HearthError.self) { try ModelReference.parse("a/b/c") }
        for text in ["org/repo", "org/repo@v1:Q8_0", "org/repo:Q4_0"] {
            #expect(try ModelReference.parse(ModelReference.parse(text).description) == ModelReference.parse(text))
        }
    }

    @Test func registryListsCapabilities() {
        let entry = ModelRegistry.curated.entry("ALL-MINILM")
        #expect(entry?.capabilities == ["embedding"])
        #expect(ModelRegistry.curated.entries.allSatisfy { $0.contextLength > 0 && $0.downloadSize > 0 && $0.repo.contains("/") })
    }

    @Test func picksTheQuantization() throws {
        let files = [HubFile(path: "m-Q8_0.gguf", size: 8), HubFile(path: "m-Q4_K_M.gguf", size: 4), HubFile(path: "m-Q4_K.gguf", size: 5),
                     HubFile(path: "big-Q2_K-00001-of-00002.gguf", size: 1), HubFile(path: "big-Q2_K-00002-of-00002.gguf", size: 1),
                     HubFile(path: "README.md", size: 1)]
        #expect(try QuantizationPicker.pick(files, quantization: "q8_0").map(\.path) == ["m-Q8_0.gguf"])
        #expect(try QuantizationPicker.pick(files, quantization: "Q4_K").map(\.path) == ["m-Q4_K.gguf"])
        #expect(try QuantizationPicker.pick(files, quantization: nil).map(\.path) == ["m-Q4_K_M.gguf"])
        #expect(try QuantizationPicker.pick(files, quantization: "Q2_K").count == 2)
        #expect(throws: HearthError.self) { try QuantizationPicker.pick(files, quantization: "Q3_K_S") }
        #expect(try QuantizationPicker.pick([HubFile(path: "model.safetensors")], quantization: nil).isEmpty)
        #expect(QuantizationPicker.quantization(of: "dir/SmolLM2-135M-Instruct.Q4_1.gguf") == "Q4_1")
        #expect(QuantizationPicker.quantization(of: "gemma-3-270m-it-IQ4_XS.gguf") == "IQ4_XS")
    }
}
