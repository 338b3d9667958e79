import HearthEngine

/// What a model is asked to continue: a conversation, rendered with the model's chat template,
/// or plain text, continued as it is.
public enum Prompt: Sendable {
    /// Messages, answered as the assistant.
    case chat([ChatMessage])
    /// Text, continued as it is.
    case text(String)
}

/// What happens when a conversation no longer fits in the context window.
public enum ContextOverflowPolicy: Sendable {
    /// Throw `HearthError.contextOverflow`.
    case error
    /// Leave out the oldest turns (never the system message or the latest user message) until
    /// the prompt and room for an answer fit.
    case dropOldestTurns
}

/// A place where one conversation runs. It remembers what it last evaluated, so a prompt that
/// extends the previous one evaluates only what is new. Generations in one context run one at
/// a time.
public protocol GenerationContext: AnyObject, Sendable {
    /// Streams the answer to `prompt`. Cancelling the consuming task (or dropping the stream)
    /// stops generation after the token in progress.
    func stream(_ prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy)
        -> AsyncThrowingStream<GenerationChunk, any Error>
}

/// A model that answers prompts: on this machine (`LocalModel`) or behind an API.
public protocol LanguageModel: AnyObject, Sendable {
    /// The name it was loaded by.
    var name: String { get }
    /// Positions of context each conversation has.
    var contextLength: Int { get }
    /// A fresh context for one conversation.
    func makeContext() -> any GenerationContext
}

extension LanguageModel {
    /// Streams the answer to `messages` in a fresh context.
    public func stream(_ messages: [ChatMessage], options: GenerationOptions = .balanced)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        makeContext().stream(.chat(messages), options: options, overflow: .error)
    }

    /// Streams the answer to one user message, after `system` when given.
    public func stream(_ prompt: String, system: String? = nil, options: GenerationOptions = .balanced)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        stream(ChatMessage.conversation(system: system, user: prompt), options: options)
    }

    /// Streams the continuation of `text`, without the chat template.
    public func complete(_ text: String, options: GenerationOptions = .balanced)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        makeContext().stream(.text(text), options: options, overflow: .error)
    }

    /// The whole answer to one user message.
    public func respond(to prompt: String, system: String? = nil, options: GenerationOptions = .balanced)
        async throws -> Response {
        try await stream(prompt, system: system, options: options).collect()
    }

    /// A conversation that keeps its history and its cache between turns.
    public func chat(system: String? = nil, options: GenerationOptions = .balanced, tools: [any Tool] = []) -> ChatSession {
        ChatSession(model: self, system: system, options: options, tools: tools)
    }
}

extension ChatMessage {
    /// A system message (when given) followed by a user message.
    static func conversation(system: String?, user: String) -> [ChatMessage] {
        (system.map { [ChatMessage(role: .system, content: $0)] } ?? []) + [ChatMessage(role: .user, content: user)]
    }
}

/// A whole answer, gathered from a stream.
public struct Response: Sendable {
    /// The answer's text (for a reasoning model, without its thoughts).
    public var text: String
    /// A reasoning model's thoughts before the answer (empty for other models).
    public var reasoning = ""
    /// Why it ended (`cancelled` when the stream ended without saying).
    public var finishReason: FinishReason
    /// Usage and timings, when the generation reported them.
    public var statistics: GenerationStatistics?
    /// The generated tokens.
    public var tokens: [Int32]
    /// Each token's log-probability and alternatives, when asked for.
    public var logprobs: [(token: Int32, logprob: Float, top: [TokenLogprob])]
    /// The tool calls the model made (in a chat with tools, every round's).
    public var toolCalls: [ToolCall] = []

    /// An empty answer, to gather chunks into.
    public init() {
        self.init(text: "", finishReason: .cancelled, statistics: nil, tokens: [], logprobs: [])
    }

    /// The answer with the given parts.
    public init(text: String, finishReason: FinishReason, statistics: GenerationStatistics?, tokens: [Int32],
                logprobs: [(token: Int32, logprob: Float, top: [TokenLogprob])], reasoning: String = "") {
        self.text = text
        self.reasoning = reasoning
        self.finishReason = finishReason
        self.statistics = statistics
        self.tokens = tokens
        self.logprobs = logprobs
    }

    /// Adds the next chunk of the stream.
    public mutating func append(_ chunk: GenerationChunk) {
        text += chunk.text
        reasoning += chunk.reasoning
        if let token = chunk.token {
            tokens.append(token)
            if let logprob = chunk.logprob { logprobs.append((token, logprob, chunk.topLogprobs)) }
        }
        if let reason = chunk.finishReason {
            finishReason = reason
            statistics = chunk.statistics
        }
        if let calls = chunk.toolCalls { toolCalls += calls }
    }
}

extension AsyncThrowingStream where Element == GenerationChunk, Failure == any Error {
    /// Reads the stream to its end and gathers the answer.
    public func collect() async throws -> Response {
        var response = Response()
        for try await chunk in self { response.append(chunk) }
        return response
    }
}
