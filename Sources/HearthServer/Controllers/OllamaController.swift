import Foundation
import Hearth
import Hummingbird

/// Ollama's generation routes under /api: chat and generate, and its version.
struct OllamaController: Sendable {
    let service: HearthService

    func addRoutes(to api: some RouterMethods<BasicRequestContext>) {
        api.post("chat", use: chat)
        api.post("generate", use: generate)
        api.get("version") { _, _ in try JSONBody.response(["version": HearthService.version]) }
    }

    private func chat(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let (body, raw) = try await request.decodeJSONWithValue(OllamaChatRequest.self, limit: service.bodyLimit)
        let keepAlive = try body.generation.keep_alive.map(KeepAlive.init(json:))
        let messages = try OllamaMessage.conversation(body.messages ?? [])
        // No messages loads (or, with keep_alive 0, unloads) the model, as Ollama does.
        guard !messages.isEmpty else { return try await load(body.generation.model, keepAlive: keepAlive, chat: true) }
        return try await answer(body.generation, raw: raw, prompt: .chat(messages), keepAlive: keepAlive, chat: true)
    }

    private func generate(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let (body, raw) = try await request.decodeJSONWithValue(OllamaGenerateRequest.self, limit: service.bodyLimit)
        let keepAlive = try body.generation.keep_alive.map(KeepAlive.init(json:))
        guard let text = body.prompt, !text.isEmpty else { return try await load(body.generation.model, keepAlive: keepAlive, chat: false) }
        let prompt: Prompt = body.raw == true
            ? .text(text)
            : .chat((body.system.map { [ChatMessage(role: .system, content: $0)] } ?? []) + [ChatMessage(role: .user, content: text)])
        return try await answer(body.generation, raw: raw, prompt: prompt, keepAlive: keepAlive, chat: false)
    }

    /// Loads the model (or unloads it, for keep_alive 0) and says so in one closing line.
    private func load(_ model: String?, keepAlive: KeepAlive?, chat: Bool) async throws -> Response {
        let loaded = try await service.models.preload(model ?? "", keepAlive: keepAlive)
        var name = loaded?.name ?? ""
        if loaded == nil { name = try await service.models.canonicalName(model) }
        return try JSONBody.response(OllamaLine(chat: chat, model: name, created_at: OllamaFormat.timestamp(), text: "", done: true,
                                                done_reason: keepAlive == .seconds(0) ? "unload" : "load"))
    }

    /// Generates with the request's options, thinking and (for /api/chat) tools, and answers as
    /// one object, or streamed as NDJSON lines ending with the closing line.
    private func answer(_ body: OllamaGeneration, raw: JSONValue, prompt: Prompt, keepAlive: KeepAlive?,
                        chat: Bool) async throws -> Response {
        // The raw body keeps the schema's key order, which `Decodable` loses.
        var options = try OllamaOptions.options(body.options, format: raw["format"])
        options.thinking = try ollamaThink(body.think)
        if chat { try ChatTooling(raw, parallel: nil).apply(to: &options, parallel: nil) }
        // As ollama does, a chat longer than the context is answered from its latest turns.
        let generation = try await service.generations.start(model: body.model, prompt: prompt, options: options,
                                                             overflow: chat ? .dropOldestTurns : .error, keepAlive: keepAlive,
                                                             check: Self.thinkingCheck(options))
        let encoder = OllamaAnswerEncoder(chat: chat, generation: generation)
        guard body.stream ?? true else {
            let response = try await generation.collect()
            return try JSONBody.response(encoder.closing(response, text: response.text, thinking: response.reasoning))
        }
        return AnswerStream.response(generation, encoder: encoder)
    }

    /// Refuses `think: true` for a model that does not reason, as Ollama does.
    private static func thinkingCheck(_ options: GenerationOptions) -> @Sendable (LocalModel) throws -> Void {
        { model in
            guard options.thinking == true, model.chatFormat?.thinks != true else { return }
            throw ServerError.badRequest("\"\(model.name)\" does not support thinking", param: "think")
        }
    }
}
