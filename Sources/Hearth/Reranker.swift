import Dispatch
import Foundation
import HearthEngine

/// Orders documents by how well they answer a query, with a cross-encoder (such as
/// cross-encoder/ms-marco-MiniLM-L6-v2) running on this machine. A cross-encoder reads the
/// query and each document together, so it ranks more sharply than comparing embeddings;
/// it is meant for the few dozen candidates a first search returns.
///
/// ```swift
/// let reranker = try await Hearth().loadReranker("cross-encoder/ms-marco-MiniLM-L6-v2")
/// let ranked = try await reranker.rerank(query: "How many people live in Berlin?",
///                                        documents: ["Berlin is known for its museums.",
///                                                    "Berlin has 3.5 million inhabitants."])
/// print(ranked[0].document)  // Berlin has 3.5 million inhabitants.
/// ```
public final class Reranker: Sendable {
    /// What a score is.
    public enum ScoreKind: Sendable {
        /// What sentence-transformers' `CrossEncoder.predict` returns by default: the logit
        /// through the model's activation (a sigmoid, 0 to 1, for most one-label models; the
        /// raw logit for those whose configuration says so).
        case `default`
        /// The classifier's raw logit.
        case logit
    }

    /// The name it was loaded by.
    public let name: String
    /// The model underneath.
    public let model: CrossEncoderModel
    private let queue = DispatchQueue(label: "hearth.reranker")

    /// Loads the cross-encoder folder at `path`.
    public init(path: String, name: String? = nil, threads: Int? = nil) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HearthError.fileNotFound(path: path)
        }
        model = try CrossEncoderModel(directory: URL(fileURLWithPath: path), threads: threads)
        self.name = name ?? path
    }

    /// The classifier's labels; one for a relevance model.
    public var labels: [String] { model.labels }

    /// Most tokens of a (query, document) pair the model reads; the longer text of a pair is
    /// cut first.
    public var maximumLength: Int { model.tokenizer.maximumLength }

    /// The documents ordered best first, at most `topN` of them (all when nil), each with its
    /// index in `documents`. Equal scores keep the documents' order. Needs a one-label model.
    public func rerank(query: String, documents: [String], topN: Int? = nil, scores kind: ScoreKind = .default) async throws -> [RankedDocument] {
        if let topN, topN < 1 { throw HearthError.invalidArgument("topN must be at least 1, not \(topN).") }
        let scores = try await score(pairs: documents.map { (query, $0) }, kind)
        let ranked = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
        return ranked.prefix(topN ?? ranked.count).map { RankedDocument(index: $0, score: scores[$0], document: documents[$0]) }
    }

    /// One score per (query, document) pair, in order. Needs a one-label model; for several
    /// labels use `labelScores(pairs:)`.
    public func score(pairs: [(String, String)], _ kind: ScoreKind = .default) async throws -> [Float] {
        guard labels.count == 1 else {
            throw HearthError.invalidArgument(
                "\(name) has \(labels.count) labels (\(labels.joined(separator: ", "))), so it gives no single relevance score to rank by: use a one-label cross-encoder such as cross-encoder/ms-marco-MiniLM-L6-v2 (in Swift, labelScores(pairs:) gives this model's score per label).")
        }
        return try await labelScores(pairs: pairs, kind).map { $0[0] }
    }

    /// A score per label (in `labels` order) for each pair.
    public func labelScores(pairs: [(String, String)], _ kind: ScoreKind = .default) async throws -> [[Float]] {
        guard !pairs.isEmpty else { return [] }
        let model = self.model
        let named = pairs.map { (query: $0.0, document: $0.1) }
        return try await withCheckedThrowingContinuation { done in
            queue.async {
                done.resume(with: Swift.Result {
                    switch kind {
                    case .default: try model.scores(named)
                    case .logit: try model.logits(named)
                    }
                })
            }
        }
    }

    /// Tokens the model reads for each pair, after cutting: what a server counts as usage.
    public func tokenCount(query: String, documents: [String]) -> Int {
        documents.reduce(0) { $0 + model.tokenize(query: query, document: $1).ids.count }
    }
}

/// One document's place in a ranking.
public struct RankedDocument: Sendable, Equatable {
    /// Its position in the documents given.
    public var index: Int
    /// Its score: higher is more relevant.
    public var score: Float
    /// The document.
    public var document: String

    /// A ranked document.
    public init(index: Int, score: Float, document: String) {
        self.index = index
        self.score = score
        self.document = document
    }
}

extension Hearth {
    /// Loads the cross-encoder called `name`: a folder, a Hub repository in that form
    /// (`cross-encoder/ms-marco-MiniLM-L6-v2`) or an alias (`ms-marco-minilm`). A model that is
    /// not on disk is pulled first unless `pullIfMissing` is false (and never in offline mode).
    public func loadReranker(_ name: String, pullIfMissing: Bool = true) async throws -> Reranker {
        try Reranker(path: try await modelFolder(name, pullIfMissing: pullIfMissing), name: name, threads: configuration.threads)
    }
}
