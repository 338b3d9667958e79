import Dispatch
import Foundation
import HearthEngine
import Synchronization

/// A GGUF model running on this machine's CPU.
///
/// One loaded copy serves every context made from it. Generations in different contexts run
/// at the same time and take turns on the model's threads pass by pass, so concurrent streams
/// advance together; generations in one context run one after another.
public final class LocalModel: LanguageModel {
    /// The name it was loaded by.
    public let name: String
    /// The engine underneath: weights, tokenizer, threads.
    public let engine: TransformerModel
    /// Positions of context each conversation has.
    public let contextLength: Int
    /// The model's chat format, or nil for a model with no template and no known family.
    public let chatFormat: ChatFormat?

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
    /// bytes (default: the machine's physical memory).
    public init(path: String, name: String? = nil, threads: Int? = nil, contextLength: Int? = nil,
                memoryLimit: Int? = nil) throws {
        let engine = try TransformerModel(path: path, threads: threads)
        let length = contextLength ?? min(engine.configuration.contextLength, 4096)
        guard length >= 2, length <= engine.configuration.contextLength else {
            throw HearthError.invalidArgument(
                "Context length must be between 2 and the model's \(engine.configuration.contextLength), got \(length).")
        }
        let needed = engine.memoryEstimate(contextLength: length)
        let available = memoryLimit ?? Int(clamping: ProcessInfo.processInfo.physicalMemory)
        guard needed <= available else { throw HearthError.insufficientMemory(needed: needed, available: available) }
        self.engine = engine
        self.name = name ?? path
        self.contextLength = length
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

    /// The prompt's tokens. A conversation that does not fit is shortened as `overflow` says.
    func tokens(for prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy) throws -> [Int32] {
        let tokenizer = engine.tokenizer
        switch prompt {
        case .text(let text):
            let tokens = tokenizer.encode(text, addSpecial: true, parseSpecial: false)
            guard tokens.count < contextLength else {
                throw HearthError.contextOverflow(needed: tokens.count + 1, limit: contextLength)
            }
            return tokens
        case .chat(let messages):
            guard let chatFormat else {
                throw HearthError.unsupportedModel(
                    reason: "\(name) has no chat template and its family has no known one; use a plain-text completion")
            }
            guard messages.last?.role == .user else {
                throw HearthError.invalidArgument("A conversation to answer must end with a user message.")
            }
            // Room kept for the answer when older turns are dropped.
            let room = overflow == .dropOldestTurns ? min(options.maxTokens ?? 256, contextLength / 4) : 1
            var kept = messages
            while true {
                let text = try chatFormat.render(kept)
                let tokens = tokenizer.encode(text, addSpecial: true, parseSpecial: true)
                if tokens.count + max(room, 1) <= contextLength { return tokens }
                guard overflow == .dropOldestTurns, let oldest = kept.firstIndex(where: { $0.role != .system }),
                      let next = kept[(oldest + 1)...].firstIndex(where: { $0.role == .user }) else {
                    throw HearthError.contextOverflow(needed: tokens.count + max(room, 1), limit: contextLength)
                }
                kept.removeSubrange(oldest..<next)
            }
        }
    }

    /// Runs `work` on `queue`, counted as a generation of this model until it returns.
    func schedule(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        activity.withLock { $0.running += 1 }
        queue.async { [self] in
            work()
            let waiters = activity.withLock { activity -> [CheckedContinuation<Void, Never>] in
                activity.running -= 1
                guard activity.running == 0 else { return [] }
                defer { activity.waiters = [] }
                return activity.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
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

/// One conversation's state on a `LocalModel`: its KV cache and the tokens in it.
final class LocalContext: GenerationContext, @unchecked Sendable {
    let model: LocalModel
    /// Runs this context's generations one after another.
    private let queue = DispatchQueue(label: "hearth.context")
    /// Touched only by work on `queue`.
    private var state: DecoderState?

    init(model: LocalModel) { self.model = model }

    func stream(_ prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy)
        -> AsyncThrowingStream<GenerationChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.set() }
        model.schedule(on: queue) { [self] in
            guard !stop.isSet else {
                continuation.finish()
                return
            }
            do {
                let engine = model.engine
                let tokens = try model.tokens(for: prompt, options: options, overflow: overflow)
                let state = try self.state ?? engine.makeState(contextLength: model.contextLength)
                self.state = state
                try engine.generate(prompt: tokens, options: options, state: state) { chunk in
                    if chunk.token != nil { model.recordToken() }
                    if let stats = chunk.statistics { model.record(finished: stats) }
                    continuation.yield(chunk)
                    return !stop.isSet
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }
}

/// A flag set from any thread (when a stream's consumer goes away) and read by the generator.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
