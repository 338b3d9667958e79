import Foundation
import Hearth

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

/// Sampling fields OpenAI's chat and completion requests share: the common ones, and `n`.
struct OpenAISampling: Decodable, Sendable {
    var fields: RequestSampling
    var n: Int?

    private enum CodingKeys: String, CodingKey { case n }

    init(from decoder: any Decoder) throws {
        fields = try RequestSampling(from: decoder)
        n = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Int.self, forKey: .n)
    }

    /// Options starting from the balanced preset, with each field the request set.
    func options(maxTokens: Int?) throws -> GenerationOptions {
        var options = fields.options()
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

/// An embeddings request, as OpenAI's /v1/embeddings and Ollama's /api/embed take it: each
/// route reads its own API's fields.
struct EmbeddingRequest: Decodable, Sendable {
    var model: String?
    var input: OneOrMany<String>
    /// OpenAI's: float or base64.
    var encoding_format: String?
    /// OpenAI's: the vectors' length, which must be the model's.
    var dimensions: Int?
    /// Ollama's: how long the model stays loaded.
    var keep_alive: JSONValue?
    /// Ollama's; Hearth never shortens an input.
    var truncate: Bool?
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

/// Who wrote an OpenAI answer and when: its id (a prefix that says its kind, then random
/// digits), its time in seconds since 1970, and its model.
struct OpenAIAnswerHead: Sendable {
    var id: String
    var created: Int
    var model: String

    init(prefix: String, model: String) {
        id = prefix + ResponseID.random()
        created = Int(Date().timeIntervalSince1970)
        self.model = model
    }
}

/// An OpenAI answer as `object` names it (a chat completion, one of its chunks, a text
/// completion) with its choices; `usage` is left out of the chunks that carry none.
struct OpenAIAnswer<Choice: Encodable & Sendable>: Encodable, Sendable {
    var id: String
    var object: String
    var created: Int
    var model: String
    var choices: [Choice]
    var usage: OpenAIUsage?
    var system_fingerprint = "hearth"

    init(_ object: String, head: OpenAIAnswerHead, choices: [Choice], usage: OpenAIUsage?) {
        id = head.id
        self.object = object
        created = head.created
        model = head.model
        self.choices = choices
        self.usage = usage
    }
}

/// /v1/chat/completions' answer in one piece.
enum ChatCompletion {
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

/// /v1/chat/completions' answer streamed: the choices of one chunk.
enum ChatCompletionChunk {
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

/// /v1/completions' answer, whole or streamed.
enum TextCompletion {
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
        return reason.endsInToolCalls(toolCalls) ? "tool_calls" : reason.apiName
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

/// The answer of /v1/embeddings.
struct EmbeddingList: Encodable, Sendable {
    struct Item: Encodable, Sendable {
        var object = "embedding"
        var index: Int
        var embedding: JSONValue
    }

    var object = "list"
    var data: [Item]
    var model: String
    var usage: PromptUsage
}

/// The usage of an answer that reads its input and generates nothing (embeddings, a ranking).
struct PromptUsage: Encodable, Sendable {
    var prompt_tokens: Int
    var total_tokens: Int

    init(tokens: Int) {
        prompt_tokens = tokens
        total_tokens = tokens
    }
}
