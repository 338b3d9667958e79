import Foundation
import Hearth
import Hummingbird

/// Ollama's generation routes under /api: chat, generate and embed, and its version.
struct OllamaController: Sendable {
    let generations: Generations
    let models: ModelManager
    /// Largest request body accepted.
    let bodyLimit: Int

    func addRoutes(to api: some RouterMethods<BasicRequestContext>) {
        api.post("chat", use: chat)
        api.post("generate", use: generate)
        api.post("embed", use: embed)
        api.get("version") { _, _ in try JSONBody.response(["version": HearthService.version]) }
    }

    private func chat(_ request: Request, context: BasicRequestContext) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(OllamaChatRequest.self, limit: bodyLimit) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        let keepAlive = try body.keep_alive.map(KeepAlive.init(json:))
        let messages = try OllamaMessage.conversation(body.messages ?? [])
        // No messages loads (or, with keep_alive 0, unloads) the model, as Ollama does.
        guard !messages.isEmpty else { return try await load(body.model, keepAlive: keepAlive, chat: true) }
        // The raw body keeps the schema's key order, which `Decodable` loses.
        var options = try OllamaOptions.options(body.options, format: raw["format"])
        options.thinking = try ollamaThink(body.think)
        try ChatTooling(raw, parallel: nil).apply(to: &options, parallel: nil)
        let generation = try await generations.start(model: body.model, sampling: body.options?.sampling ?? RequestSampling(),
                                                     prompt: .chat(messages), options: options, keepAlive: keepAlive,
                                                     check: Self.thinkingCheck(options))
        return try await answer(generation, stream: body.stream ?? true, chat: true)
    }

    private func generate(_ request: Request, context: BasicRequestContext) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(OllamaGenerateRequest.self, limit: bodyLimit) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        let keepAlive = try body.keep_alive.map(KeepAlive.init(json:))
        guard let text = body.prompt, !text.isEmpty else { return try await load(body.model, keepAlive: keepAlive, chat: false) }
        var options = try OllamaOptions.options(body.options, format: raw["format"])
        options.thinking = try ollamaThink(body.think)
        let prompt: Prompt = body.raw == true
            ? .text(text)
            : .chat((body.system.map { [ChatMessage(role: .system, content: $0)] } ?? []) + [ChatMessage(role: .user, content: text)])
        let generation = try await generations.start(model: body.model, sampling: body.options?.sampling ?? RequestSampling(),
                                                     prompt: prompt, options: options, keepAlive: keepAlive,
                                                     check: Self.thinkingCheck(options))
        return try await answer(generation, stream: body.stream ?? true, chat: false)
    }

    /// Refuses `think: true` for a model that does not reason, as Ollama does.
    private static func thinkingCheck(_ options: GenerationOptions) -> @Sendable (LocalModel) throws -> Void {
        { model in
            guard options.thinking == true, model.chatFormat?.thinks != true else { return }
            throw ServerError.badRequest("\"\(model.name)\" does not support thinking", param: "think")
        }
    }

    /// Loads the model (or unloads it, for keep_alive 0) and says so in one closing line.
    private func load(_ model: String?, keepAlive: KeepAlive?, chat: Bool) async throws -> Response {
        let loaded = try await models.preload(model ?? "", keepAlive: keepAlive)
        var name = loaded?.name ?? ""
        if loaded == nil { name = try await models.canonicalName(model) }
        return try JSONBody.response(OllamaLine(chat: chat, model: name, created_at: OllamaFormat.timestamp(), text: "", done: true,
                                                done_reason: keepAlive == .seconds(0) ? "unload" : "load"))
    }

    /// The answer as one object, or streamed as NDJSON lines ending with the closing line.
    private func answer(_ generation: RunningGeneration, stream: Bool, chat: Bool) async throws -> Response {
        let encoder = OllamaAnswerEncoder(chat: chat, generation: generation)
        guard stream else {
            let response = try await generation.collect()
            return try JSONBody.response(encoder.closing(response, text: response.text, thinking: response.reasoning))
        }
        return AnswerStream.response(generation, encoder: encoder)
    }

    private func embed(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(OllamaEmbedRequest.self, limit: bodyLimit)
        let texts = body.input.all
        guard !texts.isEmpty else { throw ServerError.badRequest("input must not be empty.", param: "input") }
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await models.embed(model: body.model, texts: texts, keepAlive: try body.keep_alive.map(KeepAlive.init(json:)))
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
