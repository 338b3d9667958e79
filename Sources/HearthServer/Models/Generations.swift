import Foundation
import Hearth
import Synchronization
import Tracing

/// Where the routes start generations: the models they run on and the metrics they count in.
struct Generations: Sendable {
    let models: ModelManager
    let metrics: ServerMetrics

    /// A generation for `prompt` on the model called `model` (see `RunningGeneration.start`).
    func start(model: String?, prompt: Prompt, options: GenerationOptions, overflow: ContextOverflowPolicy = .error,
               keepAlive: KeepAlive? = nil, check: @Sendable (LocalModel) throws -> Void = { _ in }) async throws -> RunningGeneration {
        try await RunningGeneration.start(manager: models, metrics: metrics, model: model, prompt: prompt,
                                          options: options, overflow: overflow, keepAlive: keepAlive, check: check)
    }
}

/// One request's generation: a model in use, a slot, and the chunks the engine streams,
/// forwarded through a task the request can cancel. The slot and the model are given back
/// when the engine's stream ends, however it ends.
final class RunningGeneration: @unchecked Sendable {
    /// Read by one request at a time.
    private var iterator: AsyncThrowingStream<GenerationChunk, any Error>.AsyncIterator
    /// The first chunk, read by `start` so that a prompt that cannot run fails before any
    /// response is sent, and handed out by the first `next()`.
    private var pending: GenerationChunk?
    private let task: Task<Void, Never>
    let model: LocalModel
    /// When the request began, for Ollama's total_duration.
    let started: ContinuousClock.Instant
    let loadSeconds: Double

    private init(iterator: AsyncThrowingStream<GenerationChunk, any Error>.AsyncIterator, task: Task<Void, Never>,
                 model: LocalModel, started: ContinuousClock.Instant, loadSeconds: Double) {
        self.iterator = iterator
        self.task = task
        self.model = model
        self.started = started
        self.loadSeconds = loadSeconds
    }

    /// Starts generating for `prompt` on the model called `name`, waiting for a slot, and
    /// returns once the prompt is evaluated. Throws when the model is unknown, the queue is
    /// full, the prompt does not fit, or `check` refuses the model.
    ///
    /// Traced as spans under the request's: "load model" (finding the model in memory, or
    /// loading it), "queue wait" (for a slot), "prompt" (to the first token) and "generation"
    /// (to the last).
    static func start(manager: ModelManager, metrics: ServerMetrics, model name: String?, prompt: Prompt,
                      options: GenerationOptions, overflow: ContextOverflowPolicy, keepAlive: KeepAlive?,
                      check: @Sendable (LocalModel) throws -> Void = { _ in }) async throws -> RunningGeneration {
        let clock = ContinuousClock()
        let started = clock.now
        let request = ServiceContext.current ?? .topLevel
        let loading = startSpan("load model", context: request)
        let loaded: LoadedModel
        do {
            loaded = try await manager.acquire(try await manager.canonicalName(name))
        } catch {
            loading.recordError(error)
            loading.end()
            throw error
        }
        let loadSeconds = (clock.now - started) / .seconds(1)
        loading.attributes["hearth.model"] = loaded.name
        loading.end()
        guard case .language(let model, let slots) = loaded.kind else {
            await manager.release(loaded, keepAlive: keepAlive)
            let what = if case .reranker = loaded.kind { "a reranker; it scores documents (/v1/rerank, /api/rerank)" }
                       else { "an embedding model; it makes vectors (/v1/embeddings, /api/embed)" }
            throw ServerError.badRequest("'\(loaded.name)' is \(what), not text.", param: "model")
        }
        let slot: (index: Int, context: any GenerationContext)
        let waiting = startSpan("queue wait", context: request)
        waiting.attributes["hearth.model"] = loaded.name
        do {
            try check(model)
            let queued = clock.now
            slot = try await slots.acquire()
            metrics.waited(seconds: (clock.now - queued) / .seconds(1))
            waiting.attributes["hearth.slot"] = slot.index
            waiting.end()
        } catch {
            waiting.recordError(error)
            waiting.end()
            await manager.release(loaded, keepAlive: keepAlive)
            throw error
        }
        let source = slot.context.stream(prompt, options: options, overflow: overflow)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: GenerationChunk.self)
        let modelName = loaded.name
        let reading = startSpan("prompt", context: request)
        reading.attributes["hearth.model"] = modelName
        let task = Task {
            // The prompt span ends at the first token, but stays open until the statistics
            // give it its token counts.
            var firstToken: DefaultTracerClock.Instant?
            var generating: (any Span)?
            var failure: (any Error)?
            do {
                for try await chunk in source {
                    if firstToken == nil {
                        let now = DefaultTracerClock.now
                        firstToken = now
                        generating = startSpan("generation", context: request, at: now)
                        generating?.attributes["hearth.model"] = modelName
                    }
                    if let stats = chunk.statistics {
                        metrics.generation(stats)
                        reading.attributes["hearth.prompt_tokens"] = stats.promptTokens
                        reading.attributes["hearth.cached_prompt_tokens"] = stats.cachedPromptTokens
                        generating?.attributes["hearth.completion_tokens"] = stats.completionTokens
                        generating?.attributes["hearth.tokens_per_second"] = stats.tokensPerSecond
                    }
                    if let reason = chunk.finishReason { generating?.attributes["hearth.finish_reason"] = "\(reason)" }
                    continuation.yield(chunk)
                }
            } catch {
                (generating ?? reading).recordError(error)
                failure = error
            }
            // The spans end before the stream does, so inside the request's.
            reading.end(at: firstToken ?? DefaultTracerClock.now)
            generating?.end()
            // The slot and the model are given back before the stream ends: a client's next turn,
            // sent as soon as this answer is complete, finds the slot free with its conversation.
            await slots.release(slot.index)
            await manager.release(loaded, keepAlive: keepAlive)
            continuation.finish(throwing: failure)
        }
        continuation.onTermination = { _ in task.cancel() }
        let generation = RunningGeneration(iterator: stream.makeAsyncIterator(), task: task, model: model, started: started,
                                           loadSeconds: loadSeconds)
        generation.pending = try await generation.iterator.next()
        return generation
    }

    // A response dropped before its body was written (the client left first) still stops the
    // generation and frees the slot.
    deinit { task.cancel() }

    /// The next chunk; nil at the end.
    func next() async throws -> GenerationChunk? {
        if let chunk = pending {
            pending = nil
            return chunk
        }
        return try await iterator.next()
    }

    /// Stops the generation after the token in progress and frees its slot.
    func cancel() { task.cancel() }

    /// Reads the generation to its end.
    func collect() async throws -> Answer {
        var response = Answer()
        while let chunk = try await next() { response.append(chunk) }
        return response
    }

    /// Seconds since the request began.
    var elapsedSeconds: Double { (ContinuousClock().now - started) / .seconds(1) }
}
