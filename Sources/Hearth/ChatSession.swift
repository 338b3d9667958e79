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
        var overflowPolicy = ContextOverflowPolicy.dropOldestTurns
        var messages: [ChatMessage] = []
        var lastStatistics: GenerationStatistics?
        var lastTurn: Task<Void, Never>?
    }

    /// A new conversation with `model`.
    public init(model: any LanguageModel, system: String? = nil, options: GenerationOptions = .balanced) {
        self.model = model
        context = model.makeContext()
        store = Mutex(Store(system: system, options: options))
    }

    /// The system prompt, applied from the next turn on.
    public var system: String? {
        get { store.withLock { $0.system } }
        set { store.withLock { $0.system = newValue } }
    }

    /// Options of the turns that do not bring their own.
    public var options: GenerationOptions {
        get { store.withLock { $0.options } }
        set { store.withLock { $0.options = newValue } }
    }

    /// What to do when the history outgrows the context (default: drop the oldest turns).
    public var overflowPolicy: ContextOverflowPolicy {
        get { store.withLock { $0.overflowPolicy } }
        set { store.withLock { $0.overflowPolicy = newValue } }
    }

    /// The conversation so far, without the system prompt.
    public var messages: [ChatMessage] { store.withLock { $0.messages } }

    /// Usage and timings of the last turn that finished.
    public var lastStatistics: GenerationStatistics? { store.withLock { $0.lastStatistics } }

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
            let (prompt, turnOptions, policy) = try store.withLock { store in
                try edit(&store.messages)
                let system = store.system.map { [ChatMessage(role: .system, content: $0)] } ?? []
                return (system + store.messages, options ?? store.options, store.overflowPolicy)
            }
            let question = prompt.last
            var text = "", reasoning = ""
            var finish: GenerationChunk?
            for try await chunk in context.stream(.chat(prompt), options: turnOptions, overflow: policy) {
                text += chunk.text
                reasoning += chunk.reasoning
                if chunk.finishReason != nil { finish = chunk }
                continuation.yield(chunk)
            }
            if let finish, finish.finishReason == .stop || finish.finishReason == .length {
                store.withLock {
                    // A reset while the answer was written leaves nothing for it to answer.
                    guard $0.messages.last == question else { return }
                    // The answer is what the conversation keeps; the thoughts go with it for templates
                    // that show them (`reasoning_content`).
                    $0.messages.append(ChatMessage(role: .assistant, content: text, reasoning: reasoning.isEmpty ? nil : reasoning))
                    $0.lastStatistics = finish.statistics
                }
            }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
}
