import AsyncHTTPClient
import Foundation
import HearthEngine
import HearthHub
import NIOCore
import NIOHTTP1

/// A model behind an OpenAI-compatible HTTP API: a cloud service, vLLM, TGI, llama-server,
/// Ollama (`http://localhost:11434/v1`) or `hearth serve`. It answers through the same
/// `LanguageModel` and `ChatSession` API as a local model.
///
/// ```swift
/// let model = RemoteModel(name: "smollm2", baseURL: URL(string: "http://127.0.0.1:11435/v1")!)
/// let chat = model.chat(system: "Be brief.")
/// for try await chunk in chat.stream("Why is the sky blue?") { print(chunk.text, terminator: "") }
/// ```
///
/// Sampling sends the fields every such API takes (temperature, top_p, seed, penalties, stop,
/// max_tokens, logprobs, response_format with a JSON Schema, tools and tool_choice); top-k and
/// min-p are left to the server, and a GBNF grammar is refused (such APIs do not take one). Requests
/// refused with 429 or 5xx, or that fail to connect, are retried before any text arrives,
/// honouring Retry-After; a stream that breaks midway throws.
public final class RemoteModel: LanguageModel {
    /// The model's name at the endpoint.
    public let name: String
    /// The API's base URL, usually ending in `/v1`.
    public let baseURL: URL
    /// Sent as `Authorization: Bearer`.
    public let apiKey: String?
    /// The context length the endpoint gives each conversation, as far as this side knows.
    public let contextLength: Int
    /// How refused and failed requests are retried.
    public let retry: RetryPolicy
    /// Longest wait for the first byte of an answer and between two chunks.
    public let timeout: Duration

    /// A model called `name` at `baseURL`.
    public init(name: String, baseURL: URL, apiKey: String? = nil, contextLength: Int = 8192,
                retry: RetryPolicy = RetryPolicy(attempts: 4), timeout: Duration = .seconds(300)) {
        self.name = name
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.contextLength = contextLength
        self.retry = retry
        self.timeout = timeout
    }

    /// A fresh context. The endpoint keeps whatever cache it keeps; each request sends the
    /// whole conversation.
    public func makeContext() -> any GenerationContext { RemoteContext(model: self) }

    /// The names of the models the endpoint serves (`GET /models`).
    public static func models(baseURL: URL, apiKey: String? = nil) async throws -> [String] {
        let probe = RemoteModel(name: "", baseURL: baseURL, apiKey: apiKey)
        let response = try await probe.retry.run { try await probe.send(path: "models", body: nil) }
        let body = try await response.body.collect(upTo: 16 << 20)
        struct List: Decodable {
            struct Model: Decodable { var id: String }
            var data: [Model]
        }
        do {
            return try JSONDecoder().decode(List.self, from: Data(body.readableBytesView)).data.map(\.id)
        } catch {
            throw HearthError.networkFailure("\(baseURL.absoluteString)/models did not answer with a model list")
        }
    }

    /// Sends one request; a refusal becomes `HearthError.remoteRejected`.
    func send(path: String, body: Data?) async throws -> HTTPClientResponse {
        let url = baseURL.appendingPathComponent(path).absoluteString
        var request = HTTPClientRequest(url: url)
        request.method = body == nil ? .GET : .POST
        if let apiKey { request.headers.add(name: "Authorization", value: "Bearer \(apiKey)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Accept", value: "text/event-stream")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: .seconds(Int64(timeout.components.seconds)))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw HearthError.networkFailure("\(url): \(error)")
        }
        guard (200..<300).contains(response.status.code) else {
            let text = (try? await response.body.collect(upTo: 1 << 20)).map { String(buffer: $0) } ?? ""
            throw Self.rejection(url: url, status: Int(response.status.code), body: text,
                                 retryAfter: response.headers.first(name: "Retry-After").flatMap { Int($0) })
        }
        return response
    }

    private static func rejection(url: String, status: Int, body: String, retryAfter: Int?) -> HearthError {
        struct Envelope: Decodable {
            struct Detail: Decodable {
                var message: String?
                var code: String?
            }
            var error: Detail?
        }
        let detail = (try? JSONDecoder().decode(Envelope.self, from: Data(body.utf8)))?.error
        if status == 404, detail?.code == "model_not_found" || (detail?.message ?? "").contains("model") {
            return .remoteRejected(endpoint: url, status: status, message: detail?.message ?? "unknown model", retryAfter: nil)
        }
        let message = detail?.message ?? String(body.prefix(300)).trimmingCharacters(in: .whitespacesAndNewlines)
        return .remoteRejected(endpoint: url, status: status, message: message, retryAfter: retryAfter)
    }
}

/// One conversation with a remote model.
final class RemoteContext: GenerationContext {
    let model: RemoteModel

    init(model: RemoteModel) { self.model = model }

    func stream(_ prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        let model = self.model
        let task = Task {
            do {
                try await Self.run(model: model, prompt: prompt, options: options, continuation: continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private static func run(model: RemoteModel, prompt: Prompt, options: GenerationOptions,
                            continuation: AsyncThrowingStream<GenerationChunk, any Error>.Continuation) async throws {
        try options.validate()
        let (path, body) = try request(model: model.name, prompt: prompt, options: options)
        var calls = StreamedToolCalls()
        let clock = ContinuousClock()
        let started = clock.now
        let response = try await model.retry.run { try await model.send(path: path, body: body) }
        var stats = GenerationStatistics()
        var firstTokenAt: ContinuousClock.Instant?
        var reason: FinishReason?
        var pending = Data()
        var ended = false
        for try await buffer in response.body {
            pending.append(contentsOf: buffer.readableBytesView)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                pending.removeSubrange(pending.startIndex...newline)
                guard line.hasPrefix("data:") else { continue }
                let payload = line.dropFirst(5).trimmingCharacters(in: .whitespaces)
                if payload == "[DONE]" {
                    ended = true
                    break
                }
                let event: StreamEvent
                do {
                    event = try JSONDecoder().decode(StreamEvent.self, from: Data(payload.utf8))
                } catch {
                    throw HearthError.networkFailure("\(model.baseURL.absoluteString) sent an event that is not a completion chunk: \(payload.prefix(200))")
                }
                if let error = event.error {
                    throw HearthError.generationFailed("\(model.baseURL.absoluteString): \(error.message ?? "the generation failed")")
                }
                if let usage = event.usage {
                    stats.promptTokens = usage.prompt_tokens ?? 0
                    stats.completionTokens = usage.completion_tokens ?? stats.completionTokens
                    stats.cachedPromptTokens = usage.prompt_tokens_details?.cached_tokens ?? 0
                }
                for choice in event.choices ?? [] {
                    let text = choice.delta?.content ?? choice.text ?? ""
                    let reasoning = choice.delta?.reasoning_content ?? ""
                    let logprob = choice.logprobs?.content?.first
                    if !text.isEmpty || !reasoning.isEmpty || logprob != nil {
                        if firstTokenAt == nil {
                            firstTokenAt = clock.now
                            stats.timeToFirstToken = (clock.now - started) / .seconds(1)
                            stats.promptSeconds = stats.timeToFirstToken
                        }
                        var chunk = GenerationChunk(text: text, reasoning: reasoning)
                        if let logprob {
                            chunk.logprob = logprob.logprob
                        }
                        continuation.yield(chunk)
                        if event.usage == nil { stats.completionTokens += 1 }
                    }
                    for delta in choice.delta?.tool_calls ?? [] { calls.add(delta) }
                    if let finish = choice.finish_reason { reason = finish == "length" ? .length : .stop }
                }
            }
            if ended { break }
        }
        guard ended || reason != nil else {
            throw HearthError.networkFailure("\(model.baseURL.absoluteString) closed the stream before the answer ended")
        }
        stats.generationSeconds = firstTokenAt.map { (clock.now - $0) / .seconds(1) } ?? 0
        var last = GenerationChunk(text: "", finishReason: reason ?? .stop, statistics: stats)
        let toolCalls = try calls.finished(endpoint: model.baseURL.absoluteString)
        if !toolCalls.isEmpty { last.toolCalls = toolCalls }
        continuation.yield(last)
    }

    /// The endpoint and JSON body for `prompt`.
    static func request(model: String, prompt: Prompt, options: GenerationOptions) throws -> (String, Data) {
        var body: [String: Any] = ["model": model, "stream": true, "stream_options": ["include_usage": true]]
        // Named changes go alone, so that the endpoint sets them over its own model's chain.
        let s = options.sampling
        let named = options.samplingChanges?.changes ?? [.temperature(s.temperature)] + [
            s.topP.map { .topP($0) }, s.seed.map { .seed($0) }, s.presencePenalty.map { .presencePenalty($0) },
            s.frequencyPenalty.map { .frequencyPenalty($0) },
        ].compactMap { $0 }
        for change in named {
            switch change {
            case .temperature(let value): body["temperature"] = value
            case .topP(let value): body["top_p"] = value
            case .seed(let value): body["seed"] = Int64(bitPattern: value)
            case .presencePenalty(let value): body["presence_penalty"] = value
            case .frequencyPenalty(let value): body["frequency_penalty"] = value
            // OpenAI's API has no field for the other stages.
            case .topK, .minP, .repetitionPenalty, .penaltyWindow: break
            }
        }
        if let value = options.maxTokens { body["max_tokens"] = value }
        if !options.stop.isEmpty { body["stop"] = options.stop }
        let path: String
        switch prompt {
        case .chat(let messages):
            path = "chat/completions"
            body["messages"] = messages.map { message -> [String: Any] in
                var fields: [String: Any] = ["role": message.role.rawValue, "content": message.content]
                if let reasoning = message.reasoning, !reasoning.isEmpty { fields["reasoning_content"] = reasoning }
                if let calls = message.toolCalls, !calls.isEmpty {
                    fields["tool_calls"] = calls.map { call -> [String: Any] in
                        ["id": call.id, "type": "function", "function": ["name": call.name, "arguments": call.arguments.jsonText]]
                    }
                }
                if let id = message.toolCallID { fields["tool_call_id"] = id }
                if let name = message.name, message.role == .tool { fields["name"] = name }
                return fields
            }
            if !options.tools.isEmpty {
                body["tools"] = try options.tools.map { try JSONSerialization.jsonObject(with: Data($0.openAIShape.jsonText.utf8)) }
                switch options.toolChoice {
                case .auto: body["tool_choice"] = "auto"
                case .none: body["tool_choice"] = "none"
                case .required: body["tool_choice"] = "required"
                case .tool(let name): body["tool_choice"] = ["type": "function", "function": ["name": name]]
                }
                body["parallel_tool_calls"] = options.parallelToolCalls
            }
            if let schema = options.jsonSchema {
                body["response_format"] = ["type": "json_schema",
                                           "json_schema": ["name": "answer", "strict": true,
                                                           "schema": try JSONSerialization.jsonObject(with: Data(schema.jsonText.utf8))]]
            }
            if let thinking = options.thinking { body["chat_template_kwargs"] = ["enable_thinking": thinking] }
            if options.logprobs {
                body["logprobs"] = true
                if options.topLogprobs > 0 { body["top_logprobs"] = options.topLogprobs }
            }
            if options.format == .json, options.jsonSchema == nil { body["response_format"] = ["type": "json_object"] }
        case .text(let text):
            path = "completions"
            body["prompt"] = text
            if options.jsonSchema != nil || !options.tools.isEmpty {
                throw HearthError.invalidArgument("A JSON Schema or tools for a remote model need a chat prompt.")
            }
            if options.format == .json {
                throw HearthError.invalidArgument("JSON output from a remote model needs a chat prompt (response_format applies to chat completions).")
            }
        }
        if options.grammar != nil {
            throw HearthError.invalidArgument("A remote model cannot be held to a grammar; give a JSON Schema (jsonSchema) instead.")
        }
        return (path, try JSONSerialization.data(withJSONObject: body))
    }
}

/// Tool calls streamed in pieces (`delta.tool_calls`, each piece naming its call's index),
/// gathered into whole calls.
struct StreamedToolCalls {
    private var calls: [Int: (id: String, name: String, arguments: String)] = [:]

    mutating func add(_ delta: StreamEvent.Choice.Delta.ToolCall) {
        let index = delta.index ?? calls.count
        var call = calls[index] ?? ("", "", "")
        if let id = delta.id { call.id = id }
        if let name = delta.function?.name { call.name += name }
        if let arguments = delta.function?.arguments { call.arguments += arguments }
        calls[index] = call
    }

    /// The calls in order, their arguments parsed.
    func finished(endpoint: String) throws -> [ToolCall] {
        try calls.keys.sorted().map { index in
            let call = calls[index]!
            let arguments: JSONValue
            do {
                arguments = call.arguments.isEmpty ? .object([]) : try JSONValue(parsing: call.arguments)
            } catch {
                throw HearthError.generationFailed("\(endpoint) sent the arguments of \(call.name) as text that is not JSON: \(call.arguments.prefix(200))")
            }
            return ToolCall(id: call.id.isEmpty ? "call_\(index)" : call.id, name: call.name, arguments: arguments)
        }
    }
}

/// One server-sent event of a chat or text completion stream (the fields Hearth reads).
struct StreamEvent: Decodable {
    struct Choice: Decodable {
        struct Delta: Decodable {
            struct ToolCall: Decodable {
                struct Function: Decodable {
                    var name: String?
                    var arguments: String?
                }
                var index: Int?
                var id: String?
                var function: Function?
            }
            var content: String?
            var reasoning_content: String?
            var tool_calls: [ToolCall]?
        }
        struct Logprobs: Decodable {
            struct Entry: Decodable { var logprob: Float }
            var content: [Entry]?
        }
        var delta: Delta?
        var text: String?
        var logprobs: Logprobs?
        var finish_reason: String?
    }
    struct Usage: Decodable {
        struct Details: Decodable { var cached_tokens: Int? }
        var prompt_tokens: Int?
        var completion_tokens: Int?
        var prompt_tokens_details: Details?
    }
    struct Failure: Decodable { var message: String? }
    var choices: [Choice]?
    var usage: Usage?
    var error: Failure?
}
