import Foundation
import Hearth
import HearthTestSupport
import Testing

@Suite("Reranker")
struct RerankerTests {
    private let hearth = Hearth(configuration: .init(threads: 2))

    @Test("rerank orders the documents by CrossEncoder's scores, best first, cut to topN")
    func rerankOrders() async throws {
        let fixture = try CrossEncoderFixture.named(CrossEncoderSpec.tiny.name)
        let reranker = try await hearth.loadReranker(try CrossEncoderSpec.tiny.folder().url.path)
        #expect(reranker.labels == ["LABEL_0"])
        #expect(reranker.maximumLength == 48)
        // The fixture's pairs with the first query: its documents, scored as CrossEncoder did.
        let query = fixture.pairs[0].query
        let pairs = fixture.pairs.filter { $0.query == query }
        let documents = pairs.map(\.document)
        let ranked = try await reranker.rerank(query: query, documents: documents)
        #expect(ranked.map(\.index).sorted() == Array(documents.indices))
        #expect(zip(ranked, ranked.dropFirst()).allSatisfy { $0.score >= $1.score })
        for result in ranked {
            #expect(result.document == documents[result.index])
            #expect(abs(result.score - pairs[result.index].scores[0]) <= 1e-4)
        }
        let top = try await reranker.rerank(query: query, documents: documents, topN: 2)
        #expect(top == Array(ranked.prefix(2)))
        let logits = try await reranker.rerank(query: query, documents: documents, scores: .logit)
        #expect(logits.map(\.index) == ranked.map(\.index), "a sigmoid keeps the order")
        for result in logits { #expect(abs(result.score - pairs[result.index].logits[0]) <= 1e-4) }
        #expect(try await reranker.rerank(query: query, documents: []).isEmpty)
        await #expect(throws: HearthError.invalidArgument("topN must be at least 1, not 0.")) {
            _ = try await reranker.rerank(query: query, documents: documents, topN: 0)
        }
    }

    @Test("score(pairs:) is CrossEncoder.predict; several labels give labelScores")
    func scorePairs() async throws {
        let fixture = try CrossEncoderFixture.named(CrossEncoderSpec.tinyNLI.name)
        let nli = try await hearth.loadReranker(try CrossEncoderSpec.tinyNLI.folder().url.path)
        #expect(nli.labels == ["contradiction", "entailment", "neutral"])
        let scores = try await nli.labelScores(pairs: fixture.pairs.map { ($0.query, $0.document) })
        for (score, pair) in zip(scores, fixture.pairs) {
            #expect(zip(score, pair.scores).allSatisfy { abs($0 - $1) <= 1e-4 }, "\(pair)")
        }
        await #expect(throws: HearthError.self) { _ = try await nli.score(pairs: [("a", "b")]) }
        await #expect(throws: HearthError.self) { _ = try await nli.rerank(query: "a", documents: ["b"]) }

        let logit = try CrossEncoderFixture.named(CrossEncoderSpec.tinyLogit.name)
        let reranker = try await hearth.loadReranker(try CrossEncoderSpec.tinyLogit.folder().url.path)
        let single = try await reranker.score(pairs: logit.pairs.map { ($0.query, $0.document) })
        for (score, pair) in zip(single, logit.pairs) { #expect(abs(score - pair.scores[0]) <= 1e-4) }
    }

    @Test("an embedding model is not a reranker, nor a reranker an embedder, and each error says so")
    func wrongKinds() async throws {
        do {
            _ = try await hearth.loadReranker(TestFiles.model("all-MiniLM-L6-v2"))
            Issue.record("all-MiniLM-L6-v2 loaded as a reranker")
        } catch let error as HearthError {
            #expect(error.message.contains("BertModel") && error.message.contains("BertForSequenceClassification"), "\(error.message)")
        }
        do {
            _ = try await hearth.loadEmbedder(try CrossEncoderSpec.tiny.folder().url.path)
            Issue.record("a cross-encoder loaded as an embedder")
        } catch let error as HearthError {
            #expect(error.message.contains("cross-encoder") && error.message.contains("loadReranker"), "\(error.message)")
        }
        await #expect(throws: HearthError.fileNotFound(path: "/nonexistent/reranker")) {
            _ = try await hearth.loadReranker("/nonexistent/reranker")
        }
    }
}
