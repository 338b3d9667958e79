import Foundation
import HearthEngine
import Synchronization

/// A conversation with a model: its history, system prompt and options, and a context whose
/// cache carries over between turns, so each turn evaluates only its new tokens.
///
/// Turns run one after another in the order they were asked for. A turn that is cancelled
/// leaves its user message unanswered: `regenerate()` answers it, and the next `stream(_:)`
/// replaces it. When the history outgrows the context, the oldest turns are left out of the
/// prompt (`overflowPolicy`), never the system prompt or the latest message. A reasoning
/// model's thoughts are streamed in each chunk's `reasoning`; the history keeps the answer as
/// the assistant's message, with the thoughts beside it.
///
/// With tools, a turn runs the loop: the model asks for calls, the tools run (a turn's calls at
/// the same time), their results go back, and the model answers; the stream carries every
/// round's chunks, and a chunk with `toolCalls` marks the calls. `respond(to:generating:)`
/// returns a decoded `Generable` value generated under its schema.
///
/// ```swift
/// let chat = model.chat(system: "Be brief.", options: .precise)
/// for try await chunk in chat.stream("Why is the sky blue?") { print(chunk.text, terminator: "") }
/// let second = try await chat.respond(to: "And at sunset?")
/// print(second.text, second.statistics?.cachedPromptTokens ?? 0)
/// ```
public final class ChatSession: Sendable {
    /// The model answering.
    public let model: any LanguageModel
    private let context: any GenerationContext
    private let store: Mutex<Store>

    private struct Store {
        var system: String?
        var options: GenerationOptions
        var tools: [any Tool] = []
        var toolChoice = ToolChoice.auto
        var maxToolRounds = 8
        var overflowPolicy = ContextOverflowPolicy.dropOldestTurns
        var messages: [ChatMessage] = []
        var lastStatistics: GenerationStatistics?
        var lastTurn: Task<Void, Never>?
    }

    /// A new conversation with `model`, which may call `tools`.
    public init(model: any LanguageModel, system: String? = nil, options: GenerationOptions = .balanced, tools: [any Tool] = []) {
        self.model = model
        context = model.makeContext()
        var initial = Store(system: system, options: options)
        initial.tools = tools
        store = Mutex(initial)
    }

    /// The tools the model may call.
    public var tools: [any Tool] { get { self[locked: \.tools] } set { self[locked: \.tools] = newValue } }

    /// Whether the model must call a tool in a turn's first round (later rounds are `.auto`,
    /// so that it can answer with the results).
    public var toolChoice: ToolChoice { get { self[locked: \.toolChoice] } set { self[locked: \.toolChoice] = newValue } }

    /// Rounds of calls one turn may make before the model must answer.
    public var maxToolRounds: Int { get { self[locked: \.maxToolRounds] } set { self[locked: \.maxToolRounds] = max(0, newValue) } }

    /// The system prompt, applied from the next turn on.
    public var system: String? { get { self[locked: \.system] } set { self[locked: \.system] = newValue } }

    /// Options of the turns that do not bring their own.
    public var options: GenerationOptions { get { self[locked: \.options] } set { self[locked: \.options] = newValue } }

    /// What to do when the history outgrows the context (default: drop the oldest turns).
    public var overflowPolicy: ContextOverflowPolicy { get { self[locked: \.overflowPolicy] } set { self[locked: \.overflowPolicy] = newValue } }

    /// The conversation so far, without the system prompt.
    public var messages: [ChatMessage] { self[locked: \.messages] }

    /// Usage and timings of the last turn that finished.
    public var lastStatistics: GenerationStatistics? { self[locked: \.lastStatistics] }

    /// A part of the session's state, read or written under its lock.
    private subscript<Value: Sendable>(locked part: WritableKeyPath<Store, Value>) -> Value {
        get { store.withLock { $0[keyPath: part] } }
        set { store.withLock { $0[keyPath: part] = newValue } }
    }

    /// Forgets the conversation (the system prompt stays). The context's cache is kept: the
    /// next turn still reuses the system prompt's tokens.
    public func reset() {
        store.withLock {
            $0.messages = []
            $0.lastStatistics = nil
        }
    }

    /// Streams the answer to `prompt`, a new user message.
    public func stream(_ prompt: String, options: GenerationOptions? = nil) -> AsyncThrowingStream<GenerationChunk, any Error> {
        turn(options: options) { messages in
            if messages.last?.role == .user { messages.removeLast() }
            messages.append(ChatMessage(role: .user, content: prompt))
        }
    }

    /// Streams a new answer to the last user message, in place of the answer it had.
    public func regenerate(options: GenerationOptions? = nil) -> AsyncThrowingStream<GenerationChunk, any Error> {
        turn(options: options) { messages in
            if messages.last?.role == .assistant { messages.removeLast() }
            guard messages.last?.role == .user else {
                throw HearthError.invalidArgument("Nothing to regenerate: the conversation has no user message yet.")
            }
        }
    }

    /// The whole answer to `prompt`.
    public func respond(to prompt: String, options: GenerationOptions? = nil) async throws -> Response {
        try await stream(prompt, options: options).collect()
    }

    /// The answer to `prompt` as a `T`, generated under `T`'s JSON Schema.
    public func respond<T: Generable>(to prompt: String, generating type: T.Type, options: GenerationOptions? = nil) async throws -> T {
        let response = try await respond(to: prompt, options: try Self.generating(type, options ?? self.options))
        return try Self.decode(type, from: response)
    }

    /// The answer to `prompt` as a `T`, streamed: `.partial` values as the JSON grows (what has
    /// been written so far, closed), then `.complete`.
    public func stream<T: Generable>(_ prompt: String, generating type: T.Type, options: GenerationOptions? = nil)
        -> AsyncThrowingStream<Generated<T>, any Error> {
        let turnOptions: GenerationOptions
        do {
            turnOptions = try Self.generating(type, options ?? self.options)
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        let chunks = stream(prompt, options: turnOptions)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var response = Response()
                    var last: JSONValue?
                    for try await chunk in chunks {
                        response.append(chunk)
                        if !chunk.text.isEmpty, let partial = JSONValue(partialText: response.text), partial != last {
                            last = partial
                            continuation.yield(.partial(partial))
                        }
                    }
                    continuation.yield(.complete(try Self.decode(type, from: response)))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private static func generating<T: Generable>(_ type: T.Type, _ base: GenerationOptions) throws -> GenerationOptions {
        var options = base
        options.jsonSchema = try T.jsonSchema
        options.grammar = nil
        options.tools = []
        return options
    }

    private static func decode<T: Generable>(_ type: T.Type, from response: Response) throws -> T {
        guard response.finishReason == .stop else {
            throw HearthError.generationFailed("The answer ended (\(response.finishReason)) before the \(T.self) was complete; allow more tokens.")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(response.text.utf8))
        } catch {
            throw HearthError.generationFailed("The answer does not decode as \(T.self): \(error)")
        }
    }

    private func turn(options: GenerationOptions?, edit: @escaping @Sendable (inout [ChatMessage]) throws -> Void)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        let task = store.withLock { store in
            let previous = store.lastTurn
            let task = Task {
                await previous?.value
                await self.run(options: options, edit: edit, into: continuation)
            }
            store.lastTurn = task
            return task
        }
        continuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return stream
    }

    private func run(options: GenerationOptions?, edit: (inout [ChatMessage]) throws -> Void,
                     into continuation: AsyncThrowingStream<GenerationChunk, any Error>.Continuation) async {
        do {
            try Task.checkCancellation()
            var round = 0
            var edited = false
            while true {
                let (prompt, turnOptions, policy, tools) = try store.withLock { store in
                    if !edited { try edit(&store.messages) }
                    let system = store.system.map { [ChatMessage(role: .system, content: $0)] } ?? []
                    var turnOptions = options ?? store.options
                    if !store.tools.isEmpty, turnOptions.tools.isEmpty {
                        turnOptions.tools = try store.tools.map { try $0.definition }
                        let choice = store.toolChoice
                        turnOptions.toolChoice = round == 0 || choice == .none ? choice : .auto
                        if round >= store.maxToolRounds { turnOptions.toolChoice = .none }
                    }
                    return (system + store.messages, turnOptions, store.overflowPolicy, store.tools)
                }
                edited = true
                let question = prompt.last
                var text = "", reasoning = ""
                var finish: GenerationChunk?
                for try await chunk in context.stream(.chat(prompt), options: turnOptions, overflow: policy) {
                    text += chunk.text
                    reasoning += chunk.reasoning
                    if chunk.finishReason != nil { finish = chunk }
                    continuation.yield(chunk)
                }
                guard let finish, finish.finishReason == .stop || finish.finishReason == .length else { break }
                let calls = finish.toolCalls ?? []
                let kept = store.withLock { store -> Bool in
                    // A reset while the answer was written leaves nothing for it to answer.
                    guard store.messages.last == question else { return false }
                    // The answer is what the conversation keeps; the thoughts go with it for templates
                    // that show them (`reasoning_content`).
                    store.messages.append(ChatMessage(role: .assistant, content: text, reasoning: reasoning.isEmpty ? nil : reasoning,
                                                      toolCalls: calls.isEmpty ? nil : calls))
                    store.lastStatistics = finish.statistics
                    return true
                }
                guard kept, !calls.isEmpty, !tools.isEmpty else { break }
                // The round's calls run at the same time; their results go back in the calls' order.
                let results = await withTaskGroup(of: (Int, String).self) { group in
                    for (i, call) in calls.enumerated() { group.addTask { (i, await Self.run(call, with: tools)) } }
                    var results = [String](repeating: "", count: calls.count)
                    for await (i, result) in group { results[i] = result }
                    return results
                }
                try Task.checkCancellation()
                store.withLock { store in
                    for (call, result) in zip(calls, results) { store.messages.append(.toolResult(result, for: call)) }
                }
                round += 1
            }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
}

/// A typed answer as it is generated.
public enum Generated<T: Sendable>: Sendable {
    /// What has been written so far, as JSON with its open strings and containers closed.
    case partial(JSONValue)
    /// The whole answer, decoded.
    case complete(T)
}
