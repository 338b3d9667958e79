import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("Embedder")
struct EmbedderTests {
    private static let lines = [
        "The cat slept on the warm windowsill all afternoon.",
        "Interest rates rose again, and the stock market fell sharply.",
        "Preheat the oven to 200 degrees and bake the bread for forty minutes.",
        "The striker scored twice in the second half to win the match.",
        "A new vaccine reduced hospital admissions during the flu season.",
        "The rover sent back photographs of red dust on the surface of Mars.",
        "He tuned the guitar and played a slow blues song.",
        "Heavy rain and strong winds are expected along the coast tomorrow.",
    ]

    private func nearest(_ query: String, _ embedder: Embedder, _ vectors: [[Float]]) async throws -> String {
        let q = try await embedder.embed(query)
        let scores = vectors.map { v in zip(q, v).reduce(0) { $0 + $1.0 * $1.1 } }
        return Self.lines[scores.indices.max { scores[$0] < scores[$1] }!]
    }

    @Test("the lines nearest three queries are the ones about them")
    func semanticSearch() async throws {
        let embedder = try await Hearth(configuration: .init(threads: 2))
            .loadEmbedder(TestFiles.model("all-MiniLM-L6-v2"))
        #expect(embedder.dimensions == 384)
        let vectors = try await embedder.embed(Self.lines)
        for vector in vectors {
            #expect(abs(vector.reduce(0) { $0 + $1 * $1 } - 1) < 1e-4)
        }
        #expect(try await nearest("What will the weather be like?", embedder, vectors) == Self.lines[7])
        #expect(try await nearest("space exploration on another planet", embedder, vectors) == Self.lines[5])
        #expect(try await nearest("a recipe for baking", embedder, vectors) == Self.lines[2])
    }

    @Test("a folder that is not a model is a clear error")
    func badFolders() async throws {
        let hearth = Hearth(configuration: .init(threads: 1))
        await #expect(throws: HearthError.fileNotFound(path: "/nonexistent/minilm")) {
            _ = try await hearth.loadEmbedder("/nonexistent/minilm")
        }
        let directory = try TemporaryDirectory()
        try Data("{\"model_type\": \"gpt2\"}".utf8).write(to: directory.file("config.json"))
        #expect(throws: HearthError.self) { _ = try Embedder(path: directory.url.path) }
    }
}
