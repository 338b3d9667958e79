import Dispatch
import Foundation
import HearthEngine

/// Turns text into vectors for search and retrieval, with a sentence-transformers model
/// (such as all-MiniLM-L6-v2) running on this machine.
///
/// ```swift
/// let embedder = try await Hearth().loadEmbedder("models/all-MiniLM-L6-v2")
/// let vectors = try await embedder.embed(["a cat sat on the mat", "stock prices fell"])
/// ```
public final class Embedder: Sendable {
    /// The name it was loaded by.
    public let name: String
    /// The pipeline underneath.
    public let model: SentenceEmbeddingModel
    private let queue = DispatchQueue(label: "hearth.embedder")

    /// Loads the sentence-transformers folder at `path`.
    public init(path: String, name: String? = nil, threads: Int? = nil) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HearthError.fileNotFound(path: path)
        }
        // A cross-encoder's encoder would load and give vectors no one trained it for.
        guard !CrossEncoderModel.isCrossEncoder(directory: URL(fileURLWithPath: path)) else {
            throw HearthError.invalidArgument("\(path) is a cross-encoder (a reranker), not an embedding model: load it with loadReranker, or use `hearth rerank`.")
        }
        model = try SentenceEmbeddingModel(directory: URL(fileURLWithPath: path), threads: threads)
        self.name = name ?? path
    }

    /// Length of each vector.
    public var dimensions: Int { model.dimensions }

    /// The vector of `text`.
    public func embed(_ text: String) async throws -> [Float] {
        try await embed([text])[0]
    }

    /// The vectors of `texts`, in order, computed in batches.
    public func embed(_ texts: [String]) async throws -> [[Float]] {
        guard !texts.isEmpty else { return [] }
        let model = self.model
        return try await withCheckedThrowingContinuation { done in
            queue.async { done.resume(with: Result { try model.embed(texts) }) }
        }
    }
}

extension Hearth {
    /// Loads the embedding model called `name`: a sentence-transformers folder, a Hub
    /// repository in that form (`sentence-transformers/all-MiniLM-L6-v2`) or an alias
    /// (`all-minilm`). A model that is not on disk is pulled first unless `pullIfMissing` is
    /// false (and never in offline mode).
    public func loadEmbedder(_ name: String, pullIfMissing: Bool = true) async throws -> Embedder {
        try Embedder(path: try await modelFolder(name, pullIfMissing: pullIfMissing), name: name, threads: configuration.threads)
    }

    /// The folder `name` names: a path on disk (which always wins over a Hub name of the same
    /// shape), else a Hub repository in the cache, pulled first unless `pullIfMissing` is false.
    func modelFolder(_ name: String, pullIfMissing: Bool) async throws -> String {
        let path = (name as NSString).expandingTildeInPath
        if FileManager.default.fileExists(atPath: path) { return path }
        if name.hasPrefix("/") || name.hasPrefix(".") || name.hasPrefix("~") { throw HearthError.fileNotFound(path: path) }
        let folder = try await localModel(name, pullIfMissing: pullIfMissing)
        markUsed(name)
        return folder.path
    }
}
