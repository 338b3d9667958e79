import Foundation
import HearthEngine
import HearthTestSupport
import Testing

/// One string of `minilm.json`: its ids and sentence-transformers' vector.
struct MiniLMVector: Decodable, CustomTestStringConvertible, Sendable {
    let text: String
    let ids: [Int32]
    let vector: [Float]
    var testDescription: String { String(text.prefix(40)).debugDescription }
}

private struct MiniLMFile: Decodable {
    let items: [MiniLMVector]
}

private func miniLMVectors() throws -> [MiniLMVector] {
    try JSONDecoder().decode(MiniLMFile.self, from: TestFiles.reference("minilm.json")).items
}

let sharedMiniLM = Result { try SentenceEmbeddingModel(directory: TestFiles.modelURL("all-MiniLM-L6-v2"), threads: 2) }

func cosine(_ a: [Float], _ b: [Float]) -> Float {
    var dot: Float = 0, na: Float = 0, nb: Float = 0
    for i in a.indices {
        dot += a[i] * b[i]
        na += a[i] * a[i]
        nb += b[i] * b[i]
    }
    return dot / (na.squareRoot() * nb.squareRoot())
}

@Suite("all-MiniLM-L6-v2 against sentence-transformers")
struct SentenceEmbeddingTests {
    @Test("each vector has cosine ≥ 0.9999 with sentence-transformers'", arguments: try miniLMVectors())
    func matchesReference(_ reference: MiniLMVector) throws {
        let model = try sharedMiniLM.get()
        #expect(model.tokenizer.encode(reference.text) == reference.ids)
        let vector = try #require(try model.embed([reference.text]).first)
        #expect(vector.count == 384)
        #expect(cosine(vector, reference.vector) >= 0.9999)
    }

    @Test("a batch gives the vectors of its texts one by one")
    func batchesMatchSingles() throws {
        let model = try sharedMiniLM.get()
        let references = try miniLMVectors()
        let batch = try model.embed(references.map(\.text))
        #expect(batch.count == references.count)
        for (vector, reference) in zip(batch, references) {
            #expect(cosine(vector, reference.vector) >= 0.9999)
            // A batch runs whole sequences per thread, one text splits each product across the
            // threads: the same sums in the same order either way.
            #expect(try model.embed([reference.text]).first == vector, "\(reference.testDescription)")
        }
        #expect(model.pooling == .mean)
        #expect(model.normalizes)
        #expect(model.tokenizer.maximumLength == 256)
    }
}
