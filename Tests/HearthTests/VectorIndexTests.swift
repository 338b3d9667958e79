import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("Vector index")
struct VectorIndexTests {
    @Test("search ranks by cosine, and a saved index loads back equal")
    func searchSaveLoad() throws {
        var index = VectorIndex(dimensions: 3)
        try index.add("x", [1, 0, 0])
        try index.add("xy", [1, 1, 0])
        try index.add("z", [0, 0, 5])
        let matches = index.search([2, 0.1, 0], top: 2)
        #expect(matches.map(\.key) == ["x", "xy"])
        #expect(abs(matches[0].score - 0.99875) < 1e-4)
        #expect(index.search([0, 0, 1], top: 10).map(\.key) == ["z", "x", "xy"])
        #expect(index.search([1, 2], top: 1).isEmpty)

        let directory = try TemporaryDirectory()
        let file = directory.file("lines.index")
        try index.save(to: file)
        #expect(try VectorIndex(contentsOf: file) == index)
    }

    @Test("bad vectors and damaged files are clear errors")
    func refusals() throws {
        var index = VectorIndex(dimensions: 2)
        #expect(throws: HearthError.self) { try index.add("short", [1]) }
        #expect(throws: HearthError.self) { try index.add("zero", [0, 0]) }
        #expect(throws: HearthError.self) { try index.add("nan", [.nan, 1]) }
        try index.add("ok", [1, 2])
        let directory = try TemporaryDirectory()
        let file = directory.file("a.index")
        try index.save(to: file)
        let bytes = try Data(contentsOf: file)
        for cut in [0, 4, 11, 16, 20, bytes.count - 1] {
            try bytes.prefix(cut).write(to: file)
            #expect(throws: HearthError.self) { try VectorIndex(contentsOf: file) }
        }
        var huge = bytes
        huge[12] = 0xFF; huge[13] = 0xFF; huge[14] = 0xFF; huge[15] = 0x7F
        try huge.write(to: file)
        #expect(throws: HearthError.self) { try VectorIndex(contentsOf: file) }
        #expect(throws: HearthError.self) { try VectorIndex(contentsOf: directory.file("missing")) }
    }

    @Test("real embeddings: the index finds the lines about three queries, after a round trip")
    func semanticSearch() async throws {
        let embedder = try await Hearth(configuration: .init(threads: 2)).loadEmbedder(TestFiles.model("all-MiniLM-L6-v2"))
        let lines = ["The cat slept on the windowsill.", "Stocks fell as interest rates rose.",
                     "Bake the bread for forty minutes.", "Heavy rain is expected on the coast tomorrow."]
        var index = VectorIndex(dimensions: embedder.dimensions)
        for (line, vector) in zip(lines, try await embedder.embed(lines)) { try index.add(line, vector) }
        let directory = try TemporaryDirectory()
        try index.save(to: directory.file("i"))
        let loaded = try VectorIndex(contentsOf: directory.file("i"))
        #expect(loaded.search(try await embedder.embed("weather forecast"), top: 1).first?.key == lines[3])
        #expect(loaded.search(try await embedder.embed("the economy and markets"), top: 1).first?.key == lines[1])
        #expect(loaded.search(try await embedder.embed("a pet animal"), top: 1).first?.key == lines[0])
    }
}
