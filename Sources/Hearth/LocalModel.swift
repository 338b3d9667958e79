import Foundation
import HearthEngine
import Synchronization

/// A GGUF model running on this machine's CPU.
///
/// One loaded copy serves every context made from it. Generations in different contexts run
/// at the same time in shared forward passes (each step evaluates the next token of every one
/// of them at once), and each gives exactly the tokens it would give alone; generations in one
/// context run one after another.
public final class LocalModel: LanguageModel {
    /// The name it was loaded by.
    public let name: String
    /// The engine underneath: weights, tokenizer, threads.
    public let engine: TransformerModel
    /// Positions of context each conversation has.
    public let contextLength: Int
    /// How each conversation's KV cache keeps keys and values.
    public let cacheTypes: KVCacheTypes
    /// Bytes one conversation's KV cache takes (reserved as it fills), with a hybrid family's
    /// recurrent state.
    public var cacheBytesPerContext: Int {
        cacheTypes.bytesPerPosition(engine.configuration) * contextLength + engine.recurrentStateBytes
    }
    /// The model's chat format, or nil for a model with no template and no known family.
    public let chatFormat: ChatFormat?
    /// The sampling its authors recommend (its file's `general.sampling.*` keys, its family's
    /// published defaults), used wherever the balanced preset is asked for untouched.
    public let recommendedSampling: RecommendedSampling?

    /// Bytes of keys and values kept of conversations that moved on, unless told otherwise:
    /// 4 GiB, taken only as conversations fill it.
    public static let defaultPromptCacheBytes = 4 << 30

    /// What the shared passes have done: passes, rows, prompts started from another
    /// conversation's positions, the prompt cache's size.
    public var passes: BatchedGenerator.Activity { generator.activity }

    /// Runs the generations of every context of this model in shared passes.
    let generator: BatchedGenerator
    private let totals = Mutex(Usage())
    private let activity = Mutex(Activity())

    /// Generations scheduled and not yet finished, and who waits for there to be none.
    private struct Activity {
        var running = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// What a model has served since it was loaded.
    public struct Usage: Sendable, Equatable {
        /// Generations that ran to their end (cancelled ones included).
        public var requests = 0
        /// Prompt tokens, cached ones included.
        public var promptTokens = 0
        /// Prompt tokens reused from a context's cache.
        public var cachedPromptTokens = 0
        /// Tokens generated, counted as each one is sampled.
        public var completionTokens = 0
    }

    /// Loads the GGUF file at `path` to run on `threads` threads with `contextLength` positions
    /// per conversation, after checking that the weights and KV cache fit in `memoryLimit`
    /// bytes (default: the machine's physical memory). Up to `batchedGenerations` generations
    /// (in different contexts) advance together in shared forward passes; more wait their turn.
    /// A prompt starts from the longest beginning it shares with any context's conversation,
    /// or with the up to `promptCacheBytes` bytes of conversations kept after their contexts
    /// moved on. Each conversation keeps its keys and values as `cacheTypes` says (half
    /// precision, or quantized to Q8_0 or Q4_0 for about a half or a quarter of the memory).
    public init(path: String, name: String? = nil, threads: Int? = nil, contextLength: Int? = nil,
                memoryLimit: Int? = nil, batchedGenerations: Int = 16, promptCacheBytes: Int = defaultPromptCacheBytes,
                cacheTypes: KVCacheTypes = .f16) throws {
        let engine = try TransformerModel(path: path, threads: threads)
        let length = contextLength ?? min(engine.configuration.contextLength, 4096)
        guard length >= 2, length <= engine.configuration.contextLength else {
            throw HearthError.invalidArgument(
                "Context length must be between 2 and the model's \(engine.configuration.contextLength), got \(length).")
        }
        try cacheTypes.check(engine.configuration)
        let needed = engine.memoryEstimate(contextLength: length, cacheTypes: cacheTypes)
        let available = memoryLimit ?? Int(clamping: ProcessInfo.processInfo.physicalMemory)
        guard needed <= available else { throw HearthError.insufficientMemory(needed: needed, available: available) }
        self.engine = engine
        guard promptCacheBytes >= 0 else {
            throw HearthError.invalidArgument("The prompt cache's size must be 0 or more bytes, got \(promptCacheBytes).")
        }
        generator = try BatchedGenerator(model: engine, maxRunning: batchedGenerations, promptCacheBytes: promptCacheBytes)
        self.name = name ?? path
        self.contextLength = length
        self.cacheTypes = cacheTypes
        recommendedSampling = RecommendedSampling.read(engine.gguf)
        do {
            chatFormat = try ChatFormat(gguf: engine.gguf)
        } catch HearthError.unsupportedModel {
            chatFormat = nil
        }
    }

    /// A fresh context for one conversation.
    public func makeContext() -> any GenerationContext { LocalContext(model: self) }

    /// What this model has served since it was loaded.
    public var usage: Usage { totals.withLock { $0 } }

    /// Returns once no generation is scheduled or running.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let idle = activity.withLock { activity in
                if activity.running == 0 { return true }
                activity.waiters.append(done)
                return false
            }
            if idle { done.resume() }
        }
    }

    /// The prompt's tokens, and for a reasoning model's chat the splitter that separates its
    /// thoughts from its answer. A conversation that does not fit is shortened as `overflow` says.
    func tokens(for prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy) throws
        -> (tokens: [Int32], reasoning: ReasoningSplitter?) {
        let tokenizer = engine.tokenizer
        switch prompt {
        case .text(let text):
            let tokens = tokenizer.encode(text, addSpecial: true, parseSpecial: false)
            guard tokens.count < contextLength else {
                throw HearthError.contextOverflow(needed: tokens.count + 1, limit: contextLength)
            }
            return (tokens, nil)
        case .chat(let messages):
            guard let chatFormat else {
                throw HearthError.unsupportedModel(
                    reason: "\(name) has no chat template and its family has no known one; use a plain-text completion")
            }
            guard messages.last?.role == .user || messages.last?.role == .tool else {
                throw HearthError.invalidArgument("A conversation to answer must end with a user message or a tool's result.")
            }
            // Room kept for the answer when older turns are dropped.
            let room = overflow == .dropOldestTurns ? min(options.maxTokens ?? 256, contextLength / 4) : 1
            var kept = messages
            while true {
                let text = try chatFormat.render(kept, enableThinking: options.thinking, tools: options.tools,
                                                 toolChoice: options.toolChoice)
                let tokens = tokenizer.encode(text, addSpecial: true, parseSpecial: true)
                if tokens.count + max(room, 1) <= contextLength { return (tokens, chatFormat.reasoningSplitter(prompt: text, options: options)) }
                guard overflow == .dropOldestTurns, let oldest = kept.firstIndex(where: { $0.role != .system }),
                      let next = kept[(oldest + 1)...].firstIndex(where: { $0.role == .user }) else {
                    throw HearthError.contextOverflow(needed: tokens.count + max(room, 1), limit: contextLength)
                }
                kept.removeSubrange(oldest..<next)
            }
        }
    }

    /// `options` with the grammar of `tools`' calls, and the separation that keeps the calls
    /// out of the streamed text; unchanged (and nil) without tools, with `toolChoice` `.none`,
    /// or for a plain-text prompt. When the prompt leaves the answer inside its thoughts
    /// (`inThoughts`), a grammar that holds the whole answer (calls that must be made, a JSON
    /// schema, a grammar of the caller's) holds what follows the thoughts, which close first.
    func preparingTools(_ options: GenerationOptions, for prompt: Prompt,
                        inThoughts: Bool = false) throws -> (GenerationOptions, ToolCallSeparation?) {
        var prepared = options
        var separation: ToolCallSeparation?
        if case .chat = prompt, !options.tools.isEmpty, options.toolChoice != .none, let chatFormat {
            guard options.grammar == nil, options.jsonSchema == nil, options.format != .json else {
                throw HearthError.invalidArgument("Tools cannot be combined with a grammar or JSON mode in one request.")
            }
            let format = chatFormat.toolCallFormat
            (prepared.grammar, prepared.grammarTriggers) = try format.grammar(tools: options.tools, choice: options.toolChoice,
                                                                              parallel: options.parallelToolCalls)
            separation = ToolCallSeparation(format: format, tools: options.tools)
        }
        if inThoughts, prepared.grammarTriggers.isEmpty, prepared.format != .json {
            if let schema = prepared.jsonSchema {
                prepared.grammar = try ToolCallFormat.afterThoughts(engine.schemaGrammar(schema))
                prepared.jsonSchema = nil
            } else if let grammar = prepared.grammar {
                prepared.grammar = try ToolCallFormat.afterThoughts(grammar)
            }
        }
        return (prepared, separation)
    }

    /// Counts a generation as running until `ended` is called.
    func began() { activity.withLock { $0.running += 1 } }

    /// Marks a generation counted by `began` as over.
    func ended() {
        let waiters = activity.withLock { activity -> [CheckedContinuation<Void, Never>] in
            activity.running -= 1
            guard activity.running == 0 else { return [] }
            defer { activity.waiters = [] }
            return activity.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func record(finished stats: GenerationStatistics) {
        totals.withLock {
            $0.requests += 1
            $0.promptTokens += stats.promptTokens
            $0.cachedPromptTokens += stats.cachedPromptTokens
        }
    }

    func recordToken() { totals.withLock { $0.completionTokens += 1 } }
}

/// One conversation's state on a `LocalModel`: its sequence (KV cache and the tokens in it).
/// Its generations run one after another, each in the model's shared passes.
final class LocalContext: GenerationContext, @unchecked Sendable {
    let model: LocalModel
    /// Made on first use, so an idle context costs nothing.
    private let sequence = Mutex<SequenceState?>(nil)

    init(model: LocalModel) { self.model = model }

    func stream(_ prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        let model = self.model
        var options = options.applying(model.recommendedSampling)
        let tokens: [Int32], splitter: ReasoningSplitter?, sequence: SequenceState, calls: ToolCallSeparation?
        do {
            try options.validate(vocabularySize: model.engine.configuration.vocabularySize)
            (tokens, splitter) = try model.tokens(for: prompt, options: options, overflow: overflow)
            (options, calls) = try model.preparingTools(options, for: prompt, inThoughts: splitter?.isInThoughts ?? false)
            sequence = try self.sequence.withLock { existing in
                if let existing { return existing }
                let fresh = try model.engine.makeSequence(contextLength: model.contextLength, cacheTypes: model.cacheTypes)
                existing = fresh
                return fresh
            }
        } catch {
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        model.began()
        let output = ChatOutput(splitter: splitter, toolCalls: calls)
        let pipeline = output.isEmpty ? nil : Mutex(output)
        let ticket = model.generator.submit(prompt: tokens, options: options, sequence: sequence, onChunk: { chunk in
            let chunk = pipeline?.withLock { $0.process(chunk) } ?? chunk
            if chunk.token != nil { model.recordToken() }
            if let stats = chunk.statistics, chunk.finishReason != .error { model.record(finished: stats) }
            if case .terminated = continuation.yield(chunk) { return false }
            return true
        }, onEnd: { error in
            continuation.finish(throwing: error)
            model.ended()
        })
        continuation.onTermination = { _ in ticket.cancel() }
        return stream
    }
}
