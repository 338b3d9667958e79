import Foundation
import Hearth
import HearthFormats
import HearthTestSupport
import Testing

/// A request's sampling fields go over the chain the model's authors recommend, as llama-server
/// fills the fields a request leaves out from the file's general.sampling keys.
@Suite("Recommended sampling over HTTP", .serialized)
struct RecommendedSamplingServerTests {
    /// The tiny Qwen3 model with `general.sampling.top_k` 1: whatever the temperature, its
    /// recommended chain keeps only the most likely token.
    static func topOneModel(in directory: TemporaryDirectory) throws -> URL {
        let spec = try #require(TinyModel.catalog.first { $0.name == "qwen3-a" })
        let file = try GGUFFile(path: try spec.write(in: directory.url))
        var writer = GGUFWriter()
        for key in file.metadataKeys where key != "general.alignment" {
            writer.add(key, file.metadata[key]!, elementKind: file.arrayElementKind(key))
        }
        writer.add("general.sampling.top_k", .int32(1))
        for tensor in file.tensors {
            writer.addTensor(name: tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: file.data(for: tensor))
        }
        let url = directory.file("qwen3-top1.gguf")
        try writer.write(to: url)
        return url
    }

    @Test("a request that sets only temperature and seed keeps the file's recommended top-k")
    func requestFieldsOverTheRecommendation() async throws {
        let server = try await ServeProcess(parallel: 2) { directory in ["qwen3-top1": try Self.topOneModel(in: directory)] }
        defer { Task { await server.stop() } }
        let model = try LocalModel(path: server.models["qwen3-top1"]!.path, threads: 2, contextLength: 512)
        #expect(model.recommendedSampling?.sampling.topK == 1)
        // Top-k 1 at any temperature is the greedy answer; llama.cpp's default chain at
        // temperature 5 would draw from hundreds of tokens.
        let greedy = try await model.complete("Once upon a time", options: GenerationOptions(sampling: .greedy, maxTokens: 16))
            .collect().text
        try #require(!greedy.isEmpty)

        let openai = try await server.post("/v1/completions", ["model": "qwen3-top1", "prompt": "Once upon a time",
                                                               "max_tokens": 16, "temperature": 5, "seed": 11]).json()
        #expect((openai["choices"] as? [[String: Any]])?.first?["text"] as? String == greedy)

        let ollama = try await server.post("/api/generate", ["model": "qwen3-top1", "prompt": "Once upon a time", "raw": true,
                                                             "stream": false,
                                                             "options": ["temperature": 5, "seed": 11, "num_predict": 16]]).json()
        #expect(ollama["response"] as? String == greedy)

        // A field the request sets wins over the recommendation.
        let wide = try await server.post("/v1/completions", ["model": "qwen3-top1", "prompt": "Once upon a time",
                                                             "max_tokens": 16, "temperature": 5, "seed": 11, "top_k": 0,
                                                             "top_p": 1, "min_p": 0]).json()
        #expect((wide["choices"] as? [[String: Any]])?.first?["text"] as? String != greedy)
    }
}
