import Foundation
import Hearth
import Hummingbird

/// `POST /v1/rerank` and Ollama's missing `POST /api/rerank`: one body, one answer; errors
/// come in each API's own shape.
struct RerankController: Sendable {
    let service: HearthService

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        router.post("v1/rerank") { request, _ in try await rerank(request) }
        router.post("api/rerank") { request, _ in try await rerank(request) }
    }

    private func rerank(_ request: Request) async throws -> Response {
        let body = try await decodeRerankRequest(request)
        let keepAlive = try body.keep_alive.map(KeepAlive.init(json:))
        let loaded = try await service.models.acquire(try await service.models.canonicalName(body.model))
        do {
            guard case .reranker(let reranker) = loaded.kind else {
                let what = if case .embedding = loaded.kind { "an embedding model" } else { "a language model" }
                throw ServerError.badRequest(
                    "'\(loaded.name)' is \(what), not a reranker; name a cross-encoder such as cross-encoder/ms-marco-MiniLM-L6-v2.",
                    param: "model")
            }
            let documents = body.documents.map(\.text)
            let ranked = try await reranker.rerank(query: body.query, documents: documents,
                                                   topN: body.top_n.map { min($0, documents.count) })
            let tokens = reranker.tokenCount(query: body.query, documents: documents)
            await service.models.release(loaded, keepAlive: keepAlive)
            let returnDocuments = body.return_documents ?? true
            return try JSONBody.response(RerankResponse(
                id: ResponseID.random(), model: loaded.name,
                results: ranked.map { .init(index: $0.index, relevance_score: $0.score, document: returnDocuments ? .init(text: $0.document) : nil) },
                usage: PromptUsage(tokens: tokens)))
        } catch {
            await service.models.release(loaded, keepAlive: keepAlive)
            throw error
        }
    }

    /// The body, checked before any model is loaded.
    private func decodeRerankRequest(_ request: Request) async throws -> RerankRequest {
        // A document that is neither a string nor {"text": …} throws its own 400 from inside
        // the decoder.
        let body = try await request.decodeJSON(RerankRequest.self, limit: service.bodyLimit)
        guard !body.query.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw ServerError.badRequest("query must not be empty: send the text the documents should answer.", param: "query")
        }
        guard !body.documents.isEmpty else {
            throw ServerError.badRequest("documents must not be empty: send the texts to rank, as strings or {\"text\": …} objects.",
                                         param: "documents")
        }
        if let topN = body.top_n, topN < 1 {
            throw ServerError.badRequest("top_n must be at least 1, not \(topN).", param: "top_n")
        }
        return body
    }
}
