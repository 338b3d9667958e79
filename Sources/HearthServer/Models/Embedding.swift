import Foundation
import Hearth

extension ModelManager {
    /// Vectors of `texts` from the embedding model called `name`, for OpenAI's and Ollama's
    /// embedding routes.
    nonisolated func embed(model name: String?, texts: [String], keepAlive: KeepAlive?) async throws
        -> (model: String, vectors: [[Float]], dimensions: Int, tokens: Int, loadSeconds: Double) {
        let clock = ContinuousClock()
        let started = clock.now
        let loaded = try await acquire(try await canonicalName(name))
        let loadSeconds = (clock.now - started) / .seconds(1)
        do {
            guard case .embedding(let embedder) = loaded.kind else {
                let what = if case .reranker = loaded.kind { "a reranker (/v1/rerank, /api/rerank)" } else { "a language model" }
                throw ServerError.badRequest("'\(loaded.name)' is \(what); name an embedding model such as all-MiniLM-L6-v2.",
                                             param: "model")
            }
            let vectors = try await embedder.embed(texts)
            let tokens = texts.reduce(0) { $0 + embedder.model.tokenizer.encode($1).count }
            await release(loaded, keepAlive: keepAlive)
            return (loaded.name, vectors, embedder.dimensions, tokens, loadSeconds)
        } catch {
            await release(loaded, keepAlive: keepAlive)
            throw error
        }
    }
}
