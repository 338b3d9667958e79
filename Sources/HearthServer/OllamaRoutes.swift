import Foundation
import HTTPTypes
import Hearth
import Hummingbird
import NIOCore

// Wire types mirror the Ollama API's own field names.

/// Ollama's `options` object: the sampling and length settings it names.
struct OllamaOptions: Decodable, Sendable {
    var temperature: Float?
    var top_p: Float?
    var top_k: Int?
    var min_p: Float?
    var seed: Int64?
    var num_predict: Int?
    var stop: OneOrMany<String>?
    var repeat_penalty: Float?
    var repeat_last_n: Int?
    var frequency_penalty: Float?
    var presence_penalty: Float?

    /// Each sampling field given, over `chain` (the model's recommended chain, or the balanced
    /// preset's).
    @Sendable func apply(to chain: inout SamplingOptions) {
        if let value = temperature { chain.temperature = value }
        if let value = top_p { chain.topP = value }
        if let value = top_k { chain.topK = value > 0 ? value : nil }
        if let value = min_p { chain.minP = value }
        if let value = seed { chain.seed = UInt64(bitPattern: value) }
        if let value = repeat_penalty { chain.repetitionPenalty = value }
        if let value = repeat_last_n, value > 0 { chain.penaltyWindow = value }
        if let value = frequency_penalty { chain.frequencyPenalty = value }
        if let value = presence_penalty { chain.presencePenalty = value }
    }

    /// Options from the balanced preset with the given fields; `format` "json" asks for a JSON
    /// answer (a schema object is refused rather than ignored).
    static func options(_ given: OllamaOptions?, format: JSONValue?) throws -> GenerationOptions {
        var options = GenerationOptions.balanced
        if let given {
            given.apply(to: &options.sampling)
            options.stop = given.stop?.all ?? []
            // Ollama: -1 generates until the end, -2 until the context is full.
            if let value = given.num_predict, value >= 0 { options.maxTokens = value }
        }
        switch format {
        case nil, .null?, .string("")?: break
        case .string("json")?: options.format = .json
        case .object(let fields)? where !fields.isEmpty:
            guard let schema = format else { break }
            do {
                _ = try Grammar(jsonSchema: schema)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "format")
            }
            options.jsonSchema = schema
        default: throw ServerError.badRequest("format must be \"json\" or a JSON Schema object.", param: "format")
        }
        return options
    }
}

struct OllamaMessage: Codable, Sendable {
    var role: String
    var content: String
    /// A reasoning model's thoughts; left out when there are none.
    var thinking: String?
    /// An assistant's calls: `{"function": {"name", "arguments": {…}}}`.
    var tool_calls: [OllamaToolCall]?
    /// For a tool's result: the tool's name.
    var tool_name: String?

    init(role: String, content: String, thinking: String? = nil, tool_calls: [OllamaToolCall]? = nil, tool_name: String? = nil) {
        self.role = role
        self.content = content
        self.thinking = thinking
        self.tool_calls = tool_calls
        self.tool_name = tool_name
    }
}

/// A tool call as Ollama writes it: the arguments as an object.
struct OllamaToolCall: Codable, Sendable {
    struct Function: Codable, Sendable {
        var name: String
        var arguments: JSONValue
    }
    var function: Function
}

extension HearthService {
    /// Ollama's messages as a conversation: calls get ids by position (Ollama's have none), and
    /// each tool result answers the earliest call of its tool (or in order) not yet answered.
    static func ollamaConversation(_ messages: [OllamaMessage]) throws -> [ChatMessage] {
        var open: [ToolCall] = []
        var counter = 0
        return try messages.map { m in
            var message = ChatMessage(role: try ServerError.role(m.role), content: m.content, reasoning: m.thinking)
            if let calls = m.tool_calls, !calls.isEmpty {
                message.toolCalls = calls.map { call in
                    counter += 1
                    return ToolCall(id: "call_\(counter)", name: call.function.name, arguments: call.function.arguments)
                }
                open += message.toolCalls!
            }
            if message.role == .tool {
                let index = open.firstIndex { $0.name == m.tool_name } ?? (open.isEmpty ? nil : 0)
                if let index {
                    message.toolCallID = open[index].id
                    message.name = open[index].name
                    open.remove(at: index)
                } else {
                    counter += 1
                    message.toolCallID = "call_\(counter)"
                    message.name = m.tool_name
                }
            }
            return message
        }
    }
}

/// Ollama's `think`: true or false, or a level ("high", "medium", "low"), which Hearth takes
/// as true.
func ollamaThink(_ value: JSONValue?) throws -> Bool? {
    switch value {
    case nil, .null?: return nil
    case .bool(let flag)?: return flag
    case .string(let level)? where ["high", "medium", "low"].contains(level): return true
    default: throw ServerError.badRequest("think must be true, false, \"high\", \"medium\" or \"low\".", param: "think")
    }
}

struct OllamaChatRequest: Decodable, Sendable {
    var model: String?
    var messages: [OllamaMessage]?
    var stream: Bool?
    var format: JSONValue?
    var options: OllamaOptions?
    var keep_alive: JSONValue?
    var think: JSONValue?
}

struct OllamaGenerateRequest: Decodable, Sendable {
    var model: String?
    var prompt: String?
    var system: String?
    var raw: Bool?
    var stream: Bool?
    var format: JSONValue?
    var options: OllamaOptions?
    var keep_alive: JSONValue?
    var think: JSONValue?
}

struct OllamaModelRequest: Decodable, Sendable {
    var model: String?
    var name: String?
    var stream: Bool?
    var insecure: Bool?

    func required() throws -> String {
        guard let value = model ?? name, !value.isEmpty else { throw ServerError.badRequest("Name the model in \"model\".", param: "model") }
        return value
    }
}

struct OllamaEmbedRequest: Decodable, Sendable {
    var model: String?
    var input: OneOrMany<String>
    var truncate: Bool?
    var keep_alive: JSONValue?
}

/// The closing line's timings, in nanoseconds as Ollama reports them.
struct OllamaTimings: Encodable, Sendable {
    var total_duration: Int64
    var load_duration: Int64
    var prompt_eval_count: Int
    var prompt_eval_duration: Int64
    var eval_count: Int
    var eval_duration: Int64

    init(_ stats: GenerationStatistics?, total: Double, load: Double) {
        let stats = stats ?? GenerationStatistics()
        total_duration = Int64(total * 1e9)
        load_duration = Int64(load * 1e9)
        // Ollama counts the prompt tokens it evaluated, not those its cache already held.
        prompt_eval_count = stats.promptTokens - stats.cachedPromptTokens
        prompt_eval_duration = Int64(stats.promptSeconds * 1e9)
        eval_count = stats.completionTokens
        eval_duration = Int64(stats.generationSeconds * 1e9)
    }
}

/// One line of an answer: /api/chat's (the text as `message`) or /api/generate's (as
/// `response`, the thoughts as `thinking`); the closing line adds the reason and the timings.
struct OllamaLine: Encodable, Sendable {
    var chat: Bool
    var model: String
    var created_at: String
    var text: String
    var thinking = ""
    var toolCalls: [ToolCall] = []
    var done: Bool
    var done_reason: String?
    var timings: OllamaTimings?

    enum CodingKeys: CodingKey { case model, created_at, message, response, thinking, done, done_reason }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(model, forKey: .model)
        try container.encode(created_at, forKey: .created_at)
        if chat {
            let calls = toolCalls.map { OllamaToolCall(function: .init(name: $0.name, arguments: $0.arguments)) }
            try container.encode(OllamaMessage(role: "assistant", content: text, thinking: thinking.isEmpty ? nil : thinking,
                                               tool_calls: calls.isEmpty ? nil : calls), forKey: .message)
        } else {
            try container.encode(text, forKey: .response)
            if !thinking.isEmpty { try container.encode(thinking, forKey: .thinking) }
        }
        try container.encode(done, forKey: .done)
        try container.encodeIfPresent(done_reason, forKey: .done_reason)
        try timings?.encode(to: encoder)
    }
}

/// A model as /api/tags and /api/ps list it.
struct OllamaModel: Encodable, Sendable {
    var name: String
    var model: String
    var modified_at: String?
    var size: Int
    var digest: String
    var details: Details
    var expires_at: String?
    var size_vram: Int?

    struct Details: Encodable, Sendable {
        var format: String
        var family: String
        var families: [String]
        var parameter_size: String
        var quantization_level: String
    }
}

/// Ollama's error body.
struct OllamaErrorBody: Encodable, Sendable {
    var error: String
}

extension HearthService {
    func addOllamaRoutes(to router: Router<BasicRequestContext>) {
        let api = router.group("api")
        api.post("chat") { request, _ in try await self.ollamaChat(request) }
        api.post("generate") { request, _ in try await self.ollamaGenerate(request) }
        api.post("embed") { request, _ in try await self.ollamaEmbed(request) }
        api.get("tags") { _, _ in try await self.ollamaTags() }
        api.post("show") { request, _ in try await self.ollamaShow(request) }
        api.post("pull") { request, _ in try await self.ollamaPull(request) }
        api.get("ps") { _, _ in try await self.ollamaRunning() }
        api.delete("delete") { request, _ in try await self.ollamaDelete(request) }
        api.get("version") { _, _ in try JSONBody.response(["version": HearthService.version]) }
    }

    private func ollamaChat(_ request: Request) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(OllamaChatRequest.self, limit: configuration.maxBodyBytes) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        let keepAlive = try body.keep_alive.map(KeepAlive.init(json:))
        let messages = try Self.ollamaConversation(body.messages ?? [])
        // No messages loads (or, with keep_alive 0, unloads) the model, as Ollama does.
        guard !messages.isEmpty else { return try await ollamaLoad(body.model, keepAlive: keepAlive, chat: true) }
        // The raw body keeps the schema's key order, which `Decodable` loses.
        var options = try OllamaOptions.options(body.options, format: raw["format"])
        options.thinking = try ollamaThink(body.think)
        try ChatTooling(raw, parallel: nil).apply(to: &options, parallel: nil)
        let generation = try await RunningGeneration.start(manager: models, metrics: metrics, model: body.model,
                                                           sampling: { body.options?.apply(to: &$0) },
                                                           prompt: .chat(messages), options: options, keepAlive: keepAlive,
                                                           check: Self.thinkingCheck(options))
        return try await ollamaAnswer(generation, stream: body.stream ?? true, chat: true)
    }

    private func ollamaGenerate(_ request: Request) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(OllamaGenerateRequest.self, limit: configuration.maxBodyBytes) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        let keepAlive = try body.keep_alive.map(KeepAlive.init(json:))
        guard let text = body.prompt, !text.isEmpty else { return try await ollamaLoad(body.model, keepAlive: keepAlive, chat: false) }
        var options = try OllamaOptions.options(body.options, format: raw["format"])
        options.thinking = try ollamaThink(body.think)
        let prompt: Prompt = body.raw == true
            ? .text(text)
            : .chat((body.system.map { [ChatMessage(role: .system, content: $0)] } ?? []) + [ChatMessage(role: .user, content: text)])
        let generation = try await RunningGeneration.start(manager: models, metrics: metrics, model: body.model,
                                                           sampling: { body.options?.apply(to: &$0) },
                                                           prompt: prompt, options: options, keepAlive: keepAlive,
                                                           check: Self.thinkingCheck(options))
        return try await ollamaAnswer(generation, stream: body.stream ?? true, chat: false)
    }

    /// Refuses `think: true` for a model that does not reason, as Ollama does.
    private static func thinkingCheck(_ options: GenerationOptions) -> @Sendable (LocalModel) throws -> Void {
        { model in
            guard options.thinking == true, model.chatFormat?.thinks != true else { return }
            throw ServerError.badRequest("\"\(model.name)\" does not support thinking", param: "think")
        }
    }

    /// Loads the model (or unloads it, for keep_alive 0) and says so in one closing line.
    private func ollamaLoad(_ model: String?, keepAlive: KeepAlive?, chat: Bool) async throws -> Response {
        let loaded = try await models.preload(model ?? "", keepAlive: keepAlive)
        var name = loaded?.name ?? ""
        if loaded == nil { name = try await models.canonicalName(model) }
        return try JSONBody.response(OllamaLine(chat: chat, model: name, created_at: Self.timestamp(), text: "", done: true,
                                                done_reason: keepAlive == .seconds(0) ? "unload" : "load"))
    }

    /// The answer as one object, or streamed as NDJSON lines ending with the closing line.
    private func ollamaAnswer(_ generation: RunningGeneration, stream: Bool, chat: Bool) async throws -> Response {
        let name = generation.model.name
        @Sendable func line(_ chunk: GenerationChunk) -> OllamaLine {
            OllamaLine(chat: chat, model: name, created_at: Self.timestamp(), text: chunk.text, thinking: chunk.reasoning, done: false)
        }
        @Sendable func closing(_ response: Answer, text: String, thinking: String = "") -> OllamaLine {
            OllamaLine(chat: chat, model: name, created_at: Self.timestamp(), text: text, thinking: thinking, toolCalls: response.toolCalls,
                       done: true, done_reason: response.finishReason.apiName,
                       timings: OllamaTimings(response.statistics, total: generation.elapsedSeconds, load: generation.loadSeconds))
        }
        guard stream else {
            let response = try await generation.collect()
            return try JSONBody.response(closing(response, text: response.text, thinking: response.reasoning))
        }
        let events = EventWriter(framing: .ndjson)
        return Response(status: .ok, headers: events.headers, body: ResponseBody { writer in
            defer { generation.cancel() }
            var response = Answer()
            do {
                while let chunk = try await generation.next() {
                    response.append(chunk)
                    if !chunk.text.isEmpty || !chunk.reasoning.isEmpty { try await writer.write(events.frame(line(chunk))) }
                }
                try await writer.write(events.frame(closing(response, text: "")))
            } catch let error where !(error is CancellationError) {
                try await writer.write(events.frame(OllamaErrorBody(error: ServerError.from(error).message)))
            }
            try await writer.finish(nil)
        })
    }

    private func ollamaEmbed(_ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(OllamaEmbedRequest.self, limit: configuration.maxBodyBytes)
        let texts = body.input.all
        guard !texts.isEmpty else { throw ServerError.badRequest("input must not be empty.", param: "input") }
        let clock = ContinuousClock()
        let started = clock.now
        let result = try await embed(model: body.model, texts: texts, keepAlive: try body.keep_alive.map(KeepAlive.init(json:)))
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

    private func ollamaTags() async throws -> Response {
        let entries = await models.catalog()
        return try JSONBody.response(["models": entries.map { ollamaModel($0) }])
    }

    private func ollamaRunning() async throws -> Response {
        let running = await models.running()
        let list = running.map { model, expiresAt in
            var entry = ollamaModel(ModelEntry(name: model.name, url: model.url, size: model.size, modified: model.loadedAt,
                                               isEmbedding: { if case .language = model.kind { false } else { true } }()))
            entry.modified_at = nil
            entry.expires_at = Self.timestamp(expiresAt ?? Date.distantFuture)
            entry.size_vram = 0
            return entry
        }
        return try JSONBody.response(["models": list])
    }

    private func ollamaShow(_ request: Request) async throws -> Response {
        let name = try await models.canonicalName(try await request.decodeJSON(OllamaModelRequest.self, limit: configuration.maxBodyBytes).required())
        let url = try await models.locate(name)
        struct Body: Encodable {
            var modelfile: String
            var parameters: String
            var template: String
            var details: OllamaModel.Details
            var model_info: [String: JSONValue]
            var capabilities: [String]
            var modified_at: String
        }
        let modified = (try? FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date) ?? Date()
        if ModelManager.isDirectory(url) {
            return try JSONBody.response(Body(modelfile: "", parameters: "", template: "",
                                              details: .init(format: "safetensors", family: "bert", families: ["bert"], parameter_size: "",
                                                             quantization_level: "F32"),
                                              model_info: ["general.architecture": .string("bert")], capabilities: ["embedding"],
                                              modified_at: Self.timestamp(modified)))
        }
        let file = try GGUFFile(path: url.path)
        let summary = ModelSummary(file)
        var info: [String: JSONValue] = [:]
        for (key, value) in file.metadata where !key.hasPrefix("tokenizer.ggml.") {
            switch value {
            case .string(let text): info[key] = .string(text)
            case .bool(let flag): info[key] = .bool(flag)
            default:
                if let number = value.doubleValue { info[key] = .number(number) }
            }
        }
        let template = file.metadata["tokenizer.chat_template"]?.stringValue ?? ""
        return try JSONBody.response(Body(
            modelfile: "FROM \(url.path)\n", parameters: "", template: template, details: details(summary), model_info: info,
            capabilities: Self.capabilities(file, template: template), modified_at: Self.timestamp(modified)))
    }

    /// What /api/show says a language model can do: complete text, chat with a template, and
    /// think before answering.
    private static func capabilities(_ file: GGUFFile, template: String) -> [String] {
        guard !template.isEmpty else { return ["completion"] }
        let thinks = (try? ChatFormat(gguf: file))?.thinks ?? false
        return ["completion", "chat"] + (thinks ? ["thinking"] : [])
    }

    private func ollamaPull(_ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(OllamaModelRequest.self, limit: configuration.maxBodyBytes)
        let name = try body.required()
        if case .path = try ModelReference.parse(name) {
            throw ServerError.badRequest("Pull takes a Hub name (org/repo[:QUANT]) or an alias, not a path.", param: "model")
        }
        let progress = hearth.pull(name)
        struct Line: Encodable {
            var status: String
            var digest: String?
            var total: Int?
            var completed: Int?
        }
        @Sendable func line(_ event: DownloadProgress) -> Line {
            switch event.phase {
            case .resolving:
                return Line(status: "pulling manifest")
            case .downloading:
                guard let file = event.file else { return Line(status: "pulling manifest") }
                return Line(status: "pulling \(file)", digest: file, total: event.totalBytes, completed: event.completedBytes)
            case .verifying:
                return Line(status: "verifying sha256 digest", total: event.totalBytes, completed: event.completedBytes)
            case .done:
                return Line(status: "success")
            }
        }
        guard body.stream ?? true else {
            var last: DownloadProgress?
            for try await event in progress { last = event }
            return try JSONBody.response(Line(status: last?.phase == .done ? "success" : "incomplete"))
        }
        let events = EventWriter(framing: .ndjson)
        return Response(status: .ok, headers: events.headers, body: ResponseBody { writer in
            // Progress comes many times a second; a client needs a few lines a second, and the
            // newest line of each phase before the next phase begins.
            var held: Line?
            var sentStatus = ""
            var lastSent = ContinuousClock.now
            do {
                for try await event in progress {
                    let entry = line(event)
                    let now = ContinuousClock.now
                    if entry.status != sentStatus {
                        if let held { try await writer.write(events.frame(held)) }
                        try await writer.write(events.frame(entry))
                        (sentStatus, lastSent, held) = (entry.status, now, nil)
                    } else if now - lastSent >= .milliseconds(100) {
                        try await writer.write(events.frame(entry))
                        (lastSent, held) = (now, nil)
                    } else {
                        held = entry
                    }
                }
                if let held { try await writer.write(events.frame(held)) }
            } catch {
                try await writer.write(events.frame(OllamaErrorBody(error: ServerError.from(error).message)))
            }
            try await writer.finish(nil)
        })
    }

    private func ollamaDelete(_ request: Request) async throws -> Response {
        let name = try await models.canonicalName(try await request.decodeJSON(OllamaModelRequest.self, limit: configuration.maxBodyBytes).required())
        guard case .hub(let repo, _, _) = try? ModelReference.parse(name), hearth.cache.cachedRepo(repo) != nil else {
            throw ServerError.notFound("model '\(name)' not found in the cache; only pulled Hub models can be deleted.")
        }
        await models.unload(name)
        try hearth.cache.remove(repo)
        CacheUsage(cache: hearth.cache).forget(repo)
        return Response(status: .ok)
    }

    func ollamaModel(_ entry: ModelEntry) -> OllamaModel {
        let details: OllamaModel.Details
        if entry.isEmbedding {
            details = .init(format: "safetensors", family: "bert", families: ["bert"], parameter_size: "", quantization_level: "F32")
        } else if let file = try? GGUFFile(path: entry.url.path) {
            details = self.details(ModelSummary(file))
        } else {
            details = .init(format: "gguf", family: "", families: [], parameter_size: "", quantization_level: "")
        }
        return OllamaModel(name: entry.name, model: entry.name, modified_at: Self.timestamp(entry.modified), size: entry.size,
                           digest: Self.digest(entry), details: details)
    }

    private func details(_ summary: ModelSummary) -> OllamaModel.Details {
        let family = summary.architecture ?? ""
        return .init(format: "gguf", family: family, families: [family], parameter_size: ModelSummary.formatCount(summary.parameterCount),
                     quantization_level: summary.fileType ?? "")
    }

    /// A stable identifier for a model file: its blob name in the hub cache, else a hash of
    /// its path, size and date.
    static func digest(_ entry: ModelEntry) -> String {
        let resolved = entry.url.resolvingSymlinksInPath().lastPathComponent
        if resolved.count == 64, resolved.allSatisfy(\.isHexDigit) { return resolved }
        var hasher = Hasher()
        hasher.combine(entry.url.path)
        hasher.combine(entry.size)
        return String(format: "%016llx", UInt64(bitPattern: Int64(hasher.finalize())))
    }

    /// RFC 3339 with fractional seconds, as Ollama writes times.
    static func timestamp(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
