import Foundation
import HTTPTypes
import Hearth
import Hummingbird
import NIOCore

// Wire types mirror the OpenAI API's own field names.

/// A chat message as OpenAI clients send it: content as a string or as text parts; an
/// assistant's tool calls; a tool's result with the call's id.
struct OpenAIMessage: Decodable, Sendable {
    var role: String
    var content: JSONValue?
    /// An earlier answer's thoughts, as llama-server and DeepSeek's API return them.
    var reasoning_content: String?
    var tool_calls: [OpenAIToolCall]?
    var tool_call_id: String?
    var name: String?

    func message() throws -> ChatMessage {
        var message = try text()
        message.reasoning = reasoning_content
        if let calls = tool_calls, !calls.isEmpty {
            message.toolCalls = try calls.map { try $0.call() }
        }
        message.toolCallID = tool_call_id
        message.name = name
        if message.role == .tool, tool_call_id == nil {
            throw ServerError.badRequest("A tool message needs the tool_call_id of the call it answers.", param: "messages")
        }
        return message
    }

    private func text() throws -> ChatMessage {
        let role = try ServerError.role(role)
        switch content {
        case .string(let text)?:
            return ChatMessage(role: role, content: text)
        case .array(let parts)?:
            var text = ""
            for part in parts {
                guard part["type"] == .string("text"), case .string(let piece)? = part["text"] else {
                    throw ServerError.badRequest("Only text content parts ({\"type\": \"text\", \"text\": …}) are supported.", param: "messages")
                }
                text += piece
            }
            return ChatMessage(role: role, content: text)
        case .null?, nil:
            return ChatMessage(role: role, content: "")
        default:
            throw ServerError.badRequest("Message content must be a string or an array of text parts.", param: "messages")
        }
    }
}

/// Sampling fields OpenAI's chat and completion requests share.
struct OpenAISampling: Decodable, Sendable {
    var temperature: Float?
    var top_p: Float?
    var top_k: Int?
    var min_p: Float?
    var seed: Int64?
    var stop: OneOrMany<String>?
    var frequency_penalty: Float?
    var presence_penalty: Float?
    var repeat_penalty: Float?
    var n: Int?

    /// Each sampling field the request set, over `chain` (the model's recommended chain, or the
    /// balanced preset's).
    @Sendable func apply(to chain: inout SamplingOptions) {
        if let temperature { chain.temperature = temperature }
        if let top_p { chain.topP = top_p }
        if let top_k { chain.topK = top_k > 0 ? top_k : nil }
        if let min_p { chain.minP = min_p }
        if let seed { chain.seed = UInt64(bitPattern: seed) }
        if let frequency_penalty { chain.frequencyPenalty = frequency_penalty }
        if let presence_penalty { chain.presencePenalty = presence_penalty }
        if let repeat_penalty { chain.repetitionPenalty = repeat_penalty }
    }

    /// Options starting from the balanced preset, with each field the request set.
    func options(maxTokens: Int?) throws -> GenerationOptions {
        var options = GenerationOptions.balanced
        apply(to: &options.sampling)
        options.stop = stop?.all ?? []
        if let maxTokens {
            guard maxTokens >= 1 else { throw ServerError.badRequest("max_tokens must be at least 1.", param: "max_tokens") }
            options.maxTokens = maxTokens
        }
        if let n, n != 1 { throw ServerError.badRequest("n must be 1; Hearth generates one choice per request.", param: "n") }
        return options
    }
}

/// A tool call as OpenAI writes it: the arguments are JSON text.
struct OpenAIToolCall: Codable, Sendable {
    var index: Int?
    var id: String?
    var type: String? = "function"
    var function: Function

    struct Function: Codable, Sendable {
        var name: String?
        var arguments: String?
    }

    init(_ call: ToolCall, index: Int? = nil) {
        self.index = index
        id = call.id
        function = Function(name: call.name, arguments: call.arguments.jsonText)
    }

    func call() throws -> ToolCall {
        guard let name = function.name, !name.isEmpty else {
            throw ServerError.badRequest("A tool call needs function.name.", param: "messages")
        }
        let arguments: JSONValue
        do {
            arguments = try JSONValue(parsing: function.arguments ?? "{}")
        } catch {
            throw ServerError.badRequest("The arguments of the call to \(name) are not JSON: \(function.arguments ?? "")", param: "messages")
        }
        return ToolCall(id: id ?? "call_\(name)", name: name, arguments: arguments)
    }
}

/// The tools of a chat request, its tool_choice and response_format, read from the body with
/// their schemas' key order kept.
struct ChatTooling {
    var tools: [ToolDefinition] = []
    var choice = ToolChoice.auto
    var schema: JSONValue?

    init(_ body: JSONValue, parallel: Bool?) throws {
        if let list = body["tools"], list != .null {
            guard let items = list.arrayValue else { throw ServerError.badRequest("tools must be an array.", param: "tools") }
            tools = try items.map { item in
                guard item["type"]?.stringValue ?? "function" == "function", let function = item["function"],
                      let name = function["name"]?.stringValue else {
                    throw ServerError.badRequest("Each tool must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"…}}.",
                                                 param: "tools")
                }
                return ToolDefinition(name: name, description: function["description"]?.stringValue ?? "",
                                      parameters: function["parameters"] ?? .object([("type", .string("object"))]))
            }
        }
        switch body["tool_choice"] {
        case nil, .null?, .string("auto")?: choice = .auto
        case .string("none")?: choice = .none
        case .string("required")?: choice = .required
        case .object?:
            guard let name = body["tool_choice"]?["function"]?["name"]?.stringValue else {
                throw ServerError.badRequest("tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}.",
                                             param: "tool_choice")
            }
            choice = .tool(name)
        default:
            throw ServerError.badRequest("tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": …}}.",
                                         param: "tool_choice")
        }
        if let format = body["response_format"], format["type"]?.stringValue == "json_schema" {
            guard let schema = format["json_schema"]?["schema"] else {
                throw ServerError.badRequest("response_format json_schema needs json_schema.schema.", param: "response_format")
            }
            self.schema = schema
        }
    }

    func apply(to options: inout GenerationOptions, parallel: Bool?) throws {
        options.tools = tools
        options.toolChoice = choice
        options.parallelToolCalls = parallel ?? true
        if let schema {
            do {
                _ = try Grammar(jsonSchema: schema)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "response_format")
            }
            options.jsonSchema = schema
        }
        do {
            try options.validate()
        } catch let error as HearthError {
            throw ServerError.badRequest(error.message, param: tools.isEmpty ? "response_format" : "tools")
        }
        // Each tool's schema must compile; say which does not.
        for tool in tools where choice != .none {
            do {
                _ = try Grammar(jsonSchema: tool.parameters)
            } catch let error as HearthError {
                throw ServerError.badRequest("The parameters of tool \(tool.name): \(error.message)", param: "tools")
            }
        }
    }
}

struct ChatCompletionRequest: Decodable, Sendable {
    var model: String?
    var messages: [OpenAIMessage]
    var stream: Bool?
    var stream_options: StreamOptions?
    var max_tokens: Int?
    var max_completion_tokens: Int?
    var logprobs: Bool?
    var top_logprobs: Int?
    var response_format: ResponseFormatField?
    var parallel_tool_calls: Bool?
    /// Variables for the chat template, as llama-server takes them; Hearth reads
    /// `enable_thinking`.
    var chat_template_kwargs: [String: JSONValue]?
    var sampling: OpenAISampling

    struct StreamOptions: Decodable, Sendable { var include_usage: Bool? }
    struct ResponseFormatField: Decodable, Sendable { var type: String }

    enum CodingKeys: String, CodingKey {
        case model, messages, stream, stream_options, max_tokens, max_completion_tokens, logprobs, top_logprobs, response_format
        case chat_template_kwargs, parallel_tool_calls
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        model = try container.decodeIfPresent(String.self, forKey: .model)
        messages = try container.decode([OpenAIMessage].self, forKey: .messages)
        stream = try container.decodeIfPresent(Bool.self, forKey: .stream)
        stream_options = try container.decodeIfPresent(StreamOptions.self, forKey: .stream_options)
        max_tokens = try container.decodeIfPresent(Int.self, forKey: .max_tokens)
        max_completion_tokens = try container.decodeIfPresent(Int.self, forKey: .max_completion_tokens)
        logprobs = try container.decodeIfPresent(Bool.self, forKey: .logprobs)
        top_logprobs = try container.decodeIfPresent(Int.self, forKey: .top_logprobs)
        response_format = try container.decodeIfPresent(ResponseFormatField.self, forKey: .response_format)
        chat_template_kwargs = try container.decodeIfPresent([String: JSONValue].self, forKey: .chat_template_kwargs)
        parallel_tool_calls = try container.decodeIfPresent(Bool.self, forKey: .parallel_tool_calls)
        sampling = try OpenAISampling(from: decoder)
    }

    /// `chat_template_kwargs.enable_thinking`, when the request sets it.
    func enableThinking() throws -> Bool? {
        guard let kwargs = chat_template_kwargs else { return nil }
        if let unknown = kwargs.keys.sorted().first(where: { $0 != "enable_thinking" }) {
            throw ServerError.badRequest("chat_template_kwargs.\(unknown) is not supported; Hearth passes enable_thinking to the template.",
                                         param: "chat_template_kwargs")
        }
        switch kwargs["enable_thinking"] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default:
            throw ServerError.badRequest("chat_template_kwargs.enable_thinking must be true or false.", param: "chat_template_kwargs")
        }
    }
}

struct CompletionRequest: Decodable, Sendable {
    var model: String?
    var prompt: OneOrMany<String>
    var stream: Bool?
    var stream_options: ChatCompletionRequest.StreamOptions?
    var max_tokens: Int?
    var logprobs: Int?
    var echo: Bool?
    var suffix: String?
    /// A GBNF grammar the completion must match, as llama-server takes it.
    var grammar: String?
    var sampling: OpenAISampling

    enum CodingKeys: String, CodingKey { case model, prompt, stream, stream_options, max_tokens, logprobs, echo, suffix, grammar }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        model = try container.decodeIfPresent(String.self, forKey: .model)
        prompt = try container.decode(OneOrMany<String>.self, forKey: .prompt)
        stream = try container.decodeIfPresent(Bool.self, forKey: .stream)
        stream_options = try container.decodeIfPresent(ChatCompletionRequest.StreamOptions.self, forKey: .stream_options)
        max_tokens = try container.decodeIfPresent(Int.self, forKey: .max_tokens)
        logprobs = try container.decodeIfPresent(Int.self, forKey: .logprobs)
        echo = try container.decodeIfPresent(Bool.self, forKey: .echo)
        suffix = try container.decodeIfPresent(String.self, forKey: .suffix)
        grammar = try container.decodeIfPresent(String.self, forKey: .grammar)
        sampling = try OpenAISampling(from: decoder)
    }
}

struct EmbeddingRequest: Decodable, Sendable {
    var model: String?
    var input: OneOrMany<String>
    var encoding_format: String?
    var dimensions: Int?
}

struct OpenAIUsage: Encodable, Sendable {
    var prompt_tokens: Int
    var completion_tokens: Int
    var total_tokens: Int
    var prompt_tokens_details: Details?
    /// Only for an answer with thoughts.
    var completion_tokens_details: CompletionDetails?

    struct Details: Encodable, Sendable { var cached_tokens: Int }
    struct CompletionDetails: Encodable, Sendable { var reasoning_tokens: Int }

    init(_ stats: GenerationStatistics?) {
        let stats = stats ?? GenerationStatistics()
        prompt_tokens = stats.promptTokens
        completion_tokens = stats.completionTokens
        total_tokens = stats.promptTokens + stats.completionTokens
        prompt_tokens_details = Details(cached_tokens: stats.cachedPromptTokens)
        if stats.reasoningTokens > 0 { completion_tokens_details = CompletionDetails(reasoning_tokens: stats.reasoningTokens) }
    }
}

/// A token with its log-probability, as chat completions report it.
struct OpenAITokenLogprob: Encodable, Sendable {
    var token: String
    var logprob: Float
    var bytes: [UInt8]
    var top_logprobs: [Alternative]?

    struct Alternative: Encodable, Sendable {
        var token: String
        var logprob: Float
        var bytes: [UInt8]
    }

    init(token: Int32, logprob: Float, top: [TokenLogprob], tokenizer: any Tokenizer) {
        bytes = tokenizer.tokenBytes(token)
        self.token = String(decoding: bytes, as: UTF8.self)
        self.logprob = logprob
        top_logprobs = top.map {
            let bytes = tokenizer.tokenBytes($0.token)
            return Alternative(token: String(decoding: bytes, as: UTF8.self), logprob: $0.logprob, bytes: bytes)
        }
    }
}

struct ChatLogprobs: Encodable, Sendable { var content: [OpenAITokenLogprob] }

struct ChatCompletion: Encodable, Sendable {
    var id: String
    var object = "chat.completion"
    var created: Int
    var model: String
    var choices: [Choice]
    var usage: OpenAIUsage
    var system_fingerprint = "hearth"

    struct Choice: Encodable, Sendable {
        var index = 0
        var message: Message
        @NullWhenAbsent var logprobs: ChatLogprobs?
        var finish_reason: String
    }

    struct Message: Encodable, Sendable {
        var role = "assistant"
        /// Null when the answer is only tool calls.
        @NullWhenAbsent var content: String?
        /// A reasoning model's thoughts; left out when there are none.
        var reasoning_content: String?
        var tool_calls: [OpenAIToolCall]?
    }
}

struct ChatCompletionChunk: Encodable, Sendable {
    var id: String
    var object = "chat.completion.chunk"
    var created: Int
    var model: String
    var choices: [Choice]
    var usage: OpenAIUsage?
    var system_fingerprint = "hearth"

    struct Choice: Encodable, Sendable {
        var index = 0
        var delta: Delta
        @NullWhenAbsent var logprobs: ChatLogprobs? = nil
        @NullWhenAbsent var finish_reason: String? = nil
    }

    struct Delta: Encodable, Sendable {
        var role: String?
        var content: String?
        var reasoning_content: String?
        var tool_calls: [OpenAIToolCall]?

        /// The delta of a chunk: its thoughts and its answer text, each only when present (the
        /// answer's text also when a chunk has nothing else, as before thoughts existed).
        init(role: String? = nil, content: String? = nil, reasoning_content: String? = nil) {
            self.role = role
            self.content = content
            self.reasoning_content = reasoning_content
        }

        init(_ chunk: GenerationChunk) {
            reasoning_content = chunk.reasoning.isEmpty ? nil : chunk.reasoning
            content = chunk.text.isEmpty && reasoning_content != nil ? nil : chunk.text
        }
    }
}

struct TextCompletion: Encodable, Sendable {
    var id: String
    var object = "text_completion"
    var created: Int
    var model: String
    var choices: [Choice]
    var usage: OpenAIUsage?
    var system_fingerprint = "hearth"

    struct Choice: Encodable, Sendable {
        var index = 0
        var text: String
        @NullWhenAbsent var logprobs: Logprobs? = nil
        @NullWhenAbsent var finish_reason: String? = nil
    }

    /// The legacy completions log-probability layout: parallel arrays.
    struct Logprobs: Encodable, Sendable {
        var tokens: [String] = []
        var token_logprobs: [Float] = []
        var top_logprobs: [[String: Float]] = []
        var text_offset: [Int] = []

        mutating func append(token: Int32, logprob: Float, top: [TokenLogprob], offset: Int, tokenizer: any Tokenizer) {
            tokens.append(String(decoding: tokenizer.tokenBytes(token), as: UTF8.self))
            token_logprobs.append(logprob)
            var alternatives: [String: Float] = [:]
            for alternative in top {
                alternatives[String(decoding: tokenizer.tokenBytes(alternative.token), as: UTF8.self)] = alternative.logprob
            }
            top_logprobs.append(alternatives)
            text_offset.append(offset)
        }
    }
}

/// OpenAI's error body.
struct OpenAIErrorBody: Encodable, Sendable {
    var error: Detail

    struct Detail: Encodable, Sendable {
        var message: String
        var type: String
        @NullWhenAbsent var param: String?
        @NullWhenAbsent var code: String?
    }

    init(_ error: ServerError) {
        self.error = Detail(message: error.message, type: error.type, param: error.param, code: error.code)
    }
}

extension GenerationChunk {
    /// OpenAI's finish_reason for the last chunk: `tool_calls` when it carries calls.
    var openAIFinishReason: String? {
        guard let reason = finishReason else { return nil }
        return (toolCalls?.isEmpty == false) && reason == .stop ? "tool_calls" : reason.apiName
    }
}

extension FinishReason {
    /// The name OpenAI and Ollama give it.
    var apiName: String {
        switch self {
        case .stop, .cancelled: "stop"
        case .length: "length"
        case .error: "error"
        }
    }
}

extension HearthService {
    func addOpenAIRoutes(to router: Router<BasicRequestContext>) {
        let v1 = router.group("v1")
        v1.post("chat/completions") { request, _ in try await self.chatCompletion(request) }
        v1.post("completions") { request, _ in try await self.completion(request) }
        v1.post("embeddings") { request, _ in try await self.embeddings(request) }
        v1.get("models") { _, _ in try await self.listModels() }
        v1.get("models/{id}") { _, context in
            let id = try context.parameters.require("id")
            return try await self.model(id)
        }
        // Hub names have a slash: "org/repo".
        v1.get("models/{org}/{repo}") { _, context in
            try await self.model("\(try context.parameters.require("org"))/\(try context.parameters.require("repo"))")
        }
    }

    private func chatCompletion(_ request: Request) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(ChatCompletionRequest.self, limit: configuration.maxBodyBytes) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        guard !body.messages.isEmpty else { throw ServerError.badRequest("messages must not be empty.", param: "messages") }
        var options = try body.sampling.options(maxTokens: body.max_completion_tokens ?? body.max_tokens)
        options.thinking = try body.enableThinking()
        options.logprobs = body.logprobs ?? false
        options.topLogprobs = body.top_logprobs ?? 0
        if let format = body.response_format?.type {
            switch format {
            case "text", "json_schema": break
            case "json_object": options.format = .json
            default:
                throw ServerError.badRequest("response_format type '\(format)' is not supported; use text, json_object or json_schema.",
                                             param: "response_format")
            }
        }
        try ChatTooling(raw, parallel: body.parallel_tool_calls).apply(to: &options, parallel: body.parallel_tool_calls)
        let messages = try body.messages.map { try $0.message() }
        let generation = try await RunningGeneration.start(manager: models, metrics: metrics, model: body.model, sampling: body.sampling.apply,
                                                           prompt: .chat(messages), options: options, keepAlive: nil)
        let id = "chatcmpl-" + Self.randomID()
        let created = Int(Date().timeIntervalSince1970)
        let name = generation.model.name
        let tokenizer = generation.model.engine.tokenizer
        guard body.stream == true else {
            let response = try await generation.collect()
            let logprobs = options.logprobs ? ChatLogprobs(content: response.logprobs.map {
                OpenAITokenLogprob(token: $0.token, logprob: $0.logprob, top: $0.top, tokenizer: tokenizer)
            }) : nil
            let calls = response.toolCalls
            let finish = !calls.isEmpty && response.finishReason == .stop ? "tool_calls" : response.finishReason.apiName
            return try JSONBody.response(ChatCompletion(
                id: id, created: created, model: name,
                choices: [.init(message: .init(content: calls.isEmpty || !response.text.isEmpty ? response.text : nil,
                                               reasoning_content: response.reasoning.isEmpty ? nil : response.reasoning,
                                               tool_calls: calls.isEmpty ? nil : calls.map { OpenAIToolCall($0) }),
                                logprobs: logprobs, finish_reason: finish)],
                usage: OpenAIUsage(response.statistics)))
        }
        let includeUsage = body.stream_options?.include_usage ?? false
        let events = EventWriter(framing: .serverSentEvents)
        return Response(status: .ok, headers: events.headers, body: ResponseBody { writer in
            defer { generation.cancel() }
            func send(_ choice: ChatCompletionChunk.Choice?, usage: OpenAIUsage? = nil) async throws {
                try await writer.write(events.frame(ChatCompletionChunk(id: id, created: created, model: name,
                                                                         choices: choice.map { [$0] } ?? [], usage: usage)))
            }
            try await send(.init(delta: .init(role: "assistant", content: "")))
            do {
                while let chunk = try await generation.next() {
                    if chunk.finishReason != nil {
                        if !chunk.text.isEmpty || !chunk.reasoning.isEmpty { try await send(.init(delta: .init(chunk))) }
                        for (index, call) in (chunk.toolCalls ?? []).enumerated() {
                            var delta = ChatCompletionChunk.Delta()
                            delta.tool_calls = [OpenAIToolCall(call, index: index)]
                            try await send(.init(delta: delta))
                        }
                        try await send(.init(delta: .init(), finish_reason: chunk.openAIFinishReason))
                        if includeUsage { try await send(nil, usage: OpenAIUsage(chunk.statistics)) }
                    } else if !chunk.text.isEmpty || !chunk.reasoning.isEmpty || chunk.logprob != nil {
                        let logprobs = chunk.logprob.map { logprob in
                            ChatLogprobs(content: [OpenAITokenLogprob(token: chunk.token ?? 0, logprob: logprob, top: chunk.topLogprobs,
                                                                      tokenizer: tokenizer)])
                        }
                        try await send(.init(delta: .init(chunk), logprobs: logprobs))
                    }
                }
            } catch let error where !(error is CancellationError) {
                try await writer.write(events.frame(OpenAIErrorBody(ServerError.from(error))))
            }
            try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
            try await writer.finish(nil)
        })
    }

    private func completion(_ request: Request) async throws -> Response {
        guard let (body, raw) = try await request.decodeJSONWithValue(CompletionRequest.self, limit: configuration.maxBodyBytes) else {
            throw ServerError.badRequest("The request body is empty; send a JSON object.")
        }
        let prompts = body.prompt.all
        guard prompts.count == 1, let prompt = prompts.first else {
            throw ServerError.badRequest("prompt must be one string; send one request per prompt.", param: "prompt")
        }
        if body.suffix != nil { throw ServerError.badRequest("suffix (fill-in-the-middle) is not supported.", param: "suffix") }
        // OpenAI's default for this endpoint.
        var options = try body.sampling.options(maxTokens: body.max_tokens ?? 16)
        if let grammar = body.grammar, !grammar.isEmpty {
            do {
                options.grammar = try Grammar(gbnf: grammar)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "grammar")
            }
        }
        if let schema = raw["json_schema"], schema != .null {
            do {
                _ = try Grammar(jsonSchema: schema)
            } catch let error as HearthError {
                throw ServerError.badRequest(error.message, param: "json_schema")
            }
            options.jsonSchema = schema
        }
        if let logprobs = body.logprobs {
            guard (0...5).contains(logprobs) else { throw ServerError.badRequest("logprobs must be between 0 and 5.", param: "logprobs") }
            options.logprobs = true
            options.topLogprobs = logprobs
        }
        let generation = try await RunningGeneration.start(manager: models, metrics: metrics, model: body.model, sampling: body.sampling.apply,
                                                           prompt: .text(prompt), options: options, keepAlive: nil)
        let id = "cmpl-" + Self.randomID()
        let created = Int(Date().timeIntervalSince1970)
        let name = generation.model.name
        let tokenizer = generation.model.engine.tokenizer
        let echo = body.echo == true ? prompt : ""
        guard body.stream == true else {
            let response = try await generation.collect()
            var logprobs: TextCompletion.Logprobs?
            if options.logprobs {
                var table = TextCompletion.Logprobs()
                var offset = echo.utf8.count
                for entry in response.logprobs {
                    table.append(token: entry.token, logprob: entry.logprob, top: entry.top, offset: offset, tokenizer: tokenizer)
                    offset += tokenizer.tokenBytes(entry.token).count
                }
                logprobs = table
            }
            return try JSONBody.response(TextCompletion(
                id: id, created: created, model: name,
                choices: [.init(text: echo + response.text, logprobs: logprobs, finish_reason: response.finishReason.apiName)],
                usage: OpenAIUsage(response.statistics)))
        }
        let includeUsage = body.stream_options?.include_usage ?? false
        let events = EventWriter(framing: .serverSentEvents)
        return Response(status: .ok, headers: events.headers, body: ResponseBody { writer in
            defer { generation.cancel() }
            func send(_ text: String, reason: String? = nil, usage: OpenAIUsage? = nil) async throws {
                try await writer.write(events.frame(TextCompletion(id: id, created: created, model: name,
                                                                    choices: [.init(text: text, finish_reason: reason)], usage: usage)))
            }
            if !echo.isEmpty { try await send(echo) }
            do {
                while let chunk = try await generation.next() {
                    if let reason = chunk.finishReason {
                        try await send(chunk.text, reason: reason.apiName, usage: includeUsage ? OpenAIUsage(chunk.statistics) : nil)
                    } else if !chunk.text.isEmpty {
                        try await send(chunk.text)
                    }
                }
            } catch let error where !(error is CancellationError) {
                try await writer.write(events.frame(OpenAIErrorBody(ServerError.from(error))))
            }
            try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
            try await writer.finish(nil)
        })
    }

    private func embeddings(_ request: Request) async throws -> Response {
        let body = try await request.decodeJSON(EmbeddingRequest.self, limit: configuration.maxBodyBytes)
        let texts = body.input.all
        guard !texts.isEmpty else { throw ServerError.badRequest("input must not be empty.", param: "input") }
        let format = body.encoding_format ?? "float"
        guard format == "float" || format == "base64" else {
            throw ServerError.badRequest("encoding_format must be float or base64.", param: "encoding_format")
        }
        let result = try await embed(model: body.model, texts: texts, keepAlive: nil)
        if let dimensions = body.dimensions, dimensions != result.dimensions {
            throw ServerError.badRequest("\(result.model) makes vectors of \(result.dimensions) dimensions; it cannot shorten them to \(dimensions).",
                                         param: "dimensions")
        }
        struct Item: Encodable {
            var object = "embedding"
            var index: Int
            var embedding: JSONValue
        }
        struct Body: Encodable {
            var object = "list"
            var data: [Item]
            var model: String
            var usage: Usage
        }
        struct Usage: Encodable {
            var prompt_tokens: Int
            var total_tokens: Int
        }
        let items = result.vectors.enumerated().map { index, vector in
            if format == "base64" {
                let data = vector.withUnsafeBufferPointer { Data(buffer: $0) }
                return Item(index: index, embedding: .string(data.base64EncodedString()))
            }
            return Item(index: index, embedding: .array(vector.map { .number(Double($0)) }))
        }
        return try JSONBody.response(Body(data: items, model: result.model,
                                          usage: Usage(prompt_tokens: result.tokens, total_tokens: result.tokens)))
    }

    private func listModels() async throws -> Response {
        struct Body: Encodable {
            var object = "list"
            var data: [OpenAIModel]
        }
        var data = await models.catalog().map(OpenAIModel.init)
        if let speech = speech.configured, !data.contains(where: { $0.id == speech.name }) {
            data.append(OpenAIModel(speech: speech.name, url: speech.url))
        }
        return try JSONBody.response(Body(data: data))
    }

    private func model(_ id: String) async throws -> Response {
        if let speech = speech.configured, id == speech.name {
            return try JSONBody.response(OpenAIModel(speech: speech.name, url: speech.url))
        }
        let name = try await models.canonicalName(id)
        guard let entry = await models.catalog().first(where: { $0.name == name }) else { throw ServerError.modelNotFound(id) }
        return try JSONBody.response(OpenAIModel(entry))
    }

    static func randomID() -> String {
        String(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24))
    }
}

struct OpenAIModel: Encodable, Sendable {
    var id: String
    var object = "model"
    var created: Int
    var owned_by = "hearth"

    init(_ entry: ModelEntry) {
        id = entry.name
        created = Int(entry.modified.timeIntervalSince1970)
    }

    /// The speech model, dated by its folder or file.
    init(speech name: String, url: URL) {
        id = name
        let modified = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
        created = Int((modified ?? Date()).timeIntervalSince1970)
    }
}
