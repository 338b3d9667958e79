import Foundation
import Hearth
import Hummingbird

/// `POST /v1/embeddings` (OpenAI's) and `POST /api/embed` (Ollama's): one request, one way to
/// embed it, each API's own answer.
struct EmbeddingsController: Sendable {
    let service: HearthService

    func addRoutes(to router: some RouterMethods<BasicRequestContext>) {
        router.post("v1/embeddings") { request, _ in try await openAI(request) }
        router.post("api/embed") { request, _ in try await ollama(request) }
    }

    /// The request, with its input checked before any model is loaded.
    private func read(_ request: Request) async throws -> (body: EmbeddingRequest, texts: [String]) {
        let body = try await request.decodeJSON(EmbeddingRequest.self, limit: service.bodyLimit)
        let texts = body.input.all
        guard !texts.isEmpty else { throw ServerError.badRequest("input must not be empty.", param: "input") }
        return (body, texts)
    }

    private func openAI(_ request: Request) async throws -> Response {
        let (body, texts) = try await read(request)
        let format = body.encoding_format ?? "float"
        guard format == "float" || format == "base64" else {
            throw ServerError.badRequest("encoding_format must be float or base64.", param: "encoding_format")
        }
        let result = try await service.models.embed(model: body.model, texts: texts, keepAlive: nil)
        if let dimensions = body.dimensions, dimensions != result.dimensions {
            throw ServerError.badRequest("\(result.model) makes vectors of \(result.dimensions) dimensions; it cannot shorten them to \(dimensions).",
                                         param: "dimensions")
        }
        let items = result.vectors.enumerated().map { index, vector in
            if format == "base64" {
                let data = vector.withUnsafeBufferPointer { Data(buffer: $0) }
                return EmbeddingList.Item(index: index, embedding: .string(data.base64EncodedString()))
            }
            return EmbeddingList.Item(index: index, embedding: .array(vector.map { .number(Double($0)) }))
        }
        return try JSONBody.response(EmbeddingList(data: items, model: result.model, usage: PromptUsage(tokens: result.tokens)))
    }

    private func ollama(_ request: Request) async throws -> Response {
        let (body, texts) = try await read(request)
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await service.models.embed(model: body.model, texts: texts, keepAlive: try body.keep_alive.map(KeepAlive.init(json:)))
        struct Body: Encodable {
            var model: String
            var embeddings: [[Float]]
            var total_duration: Int64
            var load_duration: Int64
            var prompt_eval_count: Int
        }
        return try JSONBody.response(Body(model: result.model, embeddings: result.vectors,
                                          total_duration: Int64((clock.now - started) / .nanoseconds(1)),
                                          load_duration: Int64(result.loadSeconds * 1e9), prompt_eval_count: result.tokens))
    }
}
