import Foundation
import Hearth

// Wire types mirror the Ollama API's own field names.

/// Ollama's `options` object: the sampling settings both APIs name, `repeat_last_n` and the
/// length (`num_predict`).
struct OllamaOptions: Decodable, Sendable {
    var sampling: RequestSampling
    var num_predict: Int?

    private enum CodingKeys: String, CodingKey { case num_predict, repeat_last_n }

    init(from decoder: any Decoder) throws {
        sampling = try RequestSampling(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        num_predict = try container.decodeIfPresent(Int.self, forKey: .num_predict)
        sampling.penaltyWindow = try container.decodeIfPresent(Int.self, forKey: .repeat_last_n)
    }

    /// Options from the balanced preset with the given fields; `format` "json" asks for a JSON
    /// answer (a schema object is refused rather than ignored).
    static func options(_ given: OllamaOptions?, format: JSONValue?) throws -> GenerationOptions {
        var options = GenerationOptions.balanced
        if let given {
            options = given.sampling.options()
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

extension OllamaMessage {
    /// Ollama's messages as a conversation: calls get ids by position (Ollama's have none), and
    /// each tool result answers the earliest call of its tool (or in order) not yet answered.
    static func conversation(_ messages: [OllamaMessage]) throws -> [ChatMessage] {
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

/// What /api/chat and /api/generate both take beside the prompt.
struct OllamaGeneration: Decodable, Sendable {
    var model: String?
    var stream: Bool?
    var format: JSONValue?
    var options: OllamaOptions?
    var keep_alive: JSONValue?
    var think: JSONValue?
}

/// /api/chat's body: the conversation.
struct OllamaChatRequest: Decodable, Sendable {
    var generation: OllamaGeneration
    var messages: [OllamaMessage]?

    private enum CodingKeys: String, CodingKey { case messages }

    init(from decoder: any Decoder) throws {
        generation = try OllamaGeneration(from: decoder)
        messages = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent([OllamaMessage].self, forKey: .messages)
    }
}

/// /api/generate's body: a prompt, under a system prompt, or raw (without the chat template).
struct OllamaGenerateRequest: Decodable, Sendable {
    var generation: OllamaGeneration
    var prompt: String?
    var system: String?
    var raw: Bool?

    private enum CodingKeys: String, CodingKey { case prompt, system, raw }

    init(from decoder: any Decoder) throws {
        generation = try OllamaGeneration(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        prompt = try container.decodeIfPresent(String.self, forKey: .prompt)
        system = try container.decodeIfPresent(String.self, forKey: .system)
        raw = try container.decodeIfPresent(Bool.self, forKey: .raw)
    }
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

/// How Ollama writes times and names model files.
enum OllamaFormat {
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
