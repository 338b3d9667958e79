import Foundation
import Hearth
import HearthFormats
import HearthTestSupport
import Testing

/// The balanced preset takes the sampling a model's authors recommend: the file's
/// `general.sampling.*` keys over the family's published defaults.
@Suite("Recommended sampling feeds the balanced preset")
struct RecommendedSamplingTests {
    /// The tiny Qwen3 model, with `extra` metadata keys added.
    private func tinyQwen3(_ extra: [(String, GGUFValue)], in directory: TemporaryDirectory) throws -> URL {
        let spec = try #require(TinyModel.catalog.first { $0.name == "qwen3-a" })
        let file = try GGUFFile(path: try spec.write(in: directory.url))
        var writer = GGUFWriter()
        for key in file.metadataKeys where key != "general.alignment" {
            writer.add(key, file.metadata[key]!, elementKind: file.arrayElementKind(key))
        }
        for (key, value) in extra { writer.add(key, value) }
        for tensor in file.tensors {
            writer.addTensor(name: tensor.name, dimensions: tensor.dimensions, type: tensor.type, data: file.data(for: tensor))
        }
        let url = directory.file("qwen3-\(extra.count).gguf")
        try writer.write(to: url)
        return url
    }

    @Test("the family's defaults, the file's keys over them, nothing for a family without any")
    func sources() throws {
        let directory = try TemporaryDirectory()
        let family = try #require(RecommendedSampling.read(try GGUFFile(path: tinyQwen3([], in: directory).path)))
        #expect(family.sampling == SamplingOptions(temperature: 0.6, topK: 20, topP: 0.95, minP: 0))
        #expect(family.source == "Qwen3's published defaults")

        let keyed = try #require(RecommendedSampling.read(try GGUFFile(path: tinyQwen3([
            ("general.sampling.temp", .float32(0.3)), ("general.sampling.top_k", .int32(5)),
            ("general.sampling.penalty_repeat", .float32(1.1)), ("general.sampling.xtc_probability", .float32(0.5)),
        ], in: directory).path)))
        var expected = SamplingOptions(temperature: 0.3, topK: 5, topP: 0.95, minP: 0)
        expected.repetitionPenalty = 1.1
        #expect(keyed.sampling == expected)
        #expect(keyed.source == "the file's general.sampling keys over Qwen3's published defaults")

        #expect(RecommendedSampling.read(try GGUFFile(path: TestFiles.model(TestFiles.smolLM2))) == nil)
    }

    @Test("balanced options (a seed allowed) take the model's chain; changed ones stay the caller's")
    func applying() throws {
        let recommended = RecommendedSampling(sampling: SamplingOptions(temperature: 0.6, topK: 20, topP: 0.95, minP: 0), source: "test")
        var seeded = GenerationOptions.balanced
        seeded.seed = 9
        let applied = seeded.applying(recommended)
        #expect(applied.sampling.temperature == 0.6 && applied.sampling.topK == 20 && applied.seed == 9)
        var hotter = GenerationOptions.balanced
        hotter.temperature = 1.2
        #expect(hotter.applying(recommended) == hotter)
        #expect(GenerationOptions.greedy.applying(recommended) == .greedy)
        #expect(GenerationOptions.balanced.applying(nil) == .balanced)
    }

    @Test("named changes go over the recommended chain, or the balanced one, even where they make it balanced")
    func changes() throws {
        let recommended = RecommendedSampling(sampling: SamplingOptions(temperature: 0.6, topK: 20, topP: 0.95, minP: 0), source: "test")
        var options = GenerationOptions.greedy
        options.samplingChanges = SamplingChanges([.temperature(0.3), .seed(4)])
        let applied = options.applying(recommended)
        #expect(applied.sampling == SamplingOptions(temperature: 0.3, topK: 20, topP: 0.95, minP: 0, seed: 4))
        #expect(applied.samplingChanges == nil)
        #expect(options.applying(nil).sampling == SamplingOptions(temperature: 0.3, topK: 40, topP: 0.95, minP: 0.05, seed: 4))
        // Changes that spell out the balanced chain are still the caller's.
        options.samplingChanges = SamplingChanges([.temperature(0.8), .topK(40), .topP(0.95), .minP(0.05)])
        #expect(options.applying(recommended).sampling == GenerationOptions.balancedSampling)
        options.samplingChanges = SamplingChanges()
        #expect(options.applying(recommended).sampling == recommended.sampling)
        let decoded = try JSONDecoder().decode(GenerationOptions.self, from: JSONEncoder().encode(options))
        #expect(decoded == options)
    }

    @Test("a model's balanced answer is its recommended chain's answer")
    func localModelUsesIt() async throws {
        let directory = try TemporaryDirectory()
        let url = try tinyQwen3([("general.sampling.temp", .float32(1.5)), ("general.sampling.top_k", .int32(100))], in: directory)
        let model = try LocalModel(path: url.path, threads: 2, contextLength: 256)
        let recommended = try #require(model.recommendedSampling)
        func answer(_ options: GenerationOptions) async throws -> [Int32] {
            var tokens: [Int32] = []
            for try await chunk in model.complete("Once upon a time", options: options) {
                if let token = chunk.token { tokens.append(token) }
            }
            return tokens
        }
        var balanced = GenerationOptions.balanced
        balanced.seed = 3
        balanced.maxTokens = 24
        var explicit = GenerationOptions(sampling: recommended.sampling, maxTokens: 24)
        explicit.seed = 3
        var llamaDefaults = explicit
        llamaDefaults.sampling = GenerationOptions.balancedSampling
        llamaDefaults.sampling.seed = 3
        llamaDefaults.sampling.topK = 41
        let fromBalanced = try await answer(balanced)
        #expect(fromBalanced.count == 24)
        #expect(fromBalanced == (try await answer(explicit)))
        #expect(fromBalanced != (try await answer(llamaDefaults)))
    }
}
