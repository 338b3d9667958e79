import Foundation
import Hearth
import HearthTestSupport
import HubEmulator
import Testing

@Suite("Cross-encoders from the Hub")
struct RerankerPullTests {
    @Test("hearth rerank ms-marco-minilm pulls the cross-encoder's files, and no other format")
    func rerankAlias() async throws {
        // The tiny cross-encoder of the fixtures, served under the alias' repository.
        let folder = try CrossEncoderSpec.tiny.folder().url
        let names = ["config.json", "model.safetensors", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"]
        var files = try names.map { name -> HubEmulator.File in
            HubEmulator.File(name, try Data(contentsOf: folder.appendingPathComponent(name)), lfs: name.hasSuffix(".safetensors"))
        }
        files.append(.init("onnx/model.onnx", testBytes(300_000, seed: 62)))
        let repo = HubEmulator.Repo("cross-encoder/ms-marco-MiniLM-L6-v2", files: files, pipelineTag: "text-ranking")
        let hub = try await HubFixture([repo])
        defer { Task { await hub.stop() } }
        let documents = hub.directory.file("documents.txt")
        try "Berlin is well known for its museums.\nNew York City is famous for the Metropolitan Museum of Art.\n"
            .write(to: documents, atomically: true, encoding: .utf8)
        let rerank = try Child(TestFiles.hearthBinary, ["rerank", "ms-marco-minilm", "How many people live in Berlin?", "--in", documents.path,
                                                        "--yes", "--json"],
                               environment: childEnvironment(hub), directory: hub.directory)
        #expect(try await rerank.wait() == 0, "\(rerank.errorText)")
        let results = (try JSONSerialization.jsonObject(with: Data(rerank.outputText.utf8)) as? [String: Any])?["results"] as? [[String: Any]]
        #expect(results?.count == 2, "\(rerank.outputText)")
        #expect(hub.emulator.bytesServed("onnx/model.onnx") == 0)
        #expect(hub.emulator.bytesServed("model.safetensors") > 0)

        // Loaded again from the cache, offline; as an embedder it is refused by name.
        let offline = Hearth(configuration: .init(hub: hub.environment(offline: true)))
        let reranker = try await offline.loadReranker("ms-marco-minilm")
        #expect(reranker.labels.count == 1)
        await #expect(throws: HearthError.self) { _ = try await offline.loadEmbedder("ms-marco-minilm") }
    }
}
