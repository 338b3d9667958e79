import Foundation
import HearthFormats

/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// The model produced an end-of-generation token, or a stop sequence appeared.
    case stop
    /// The requested number of tokens was reached, or the context filled up.
    case length
    /// The caller stopped it.
    case cancelled
    /// Evaluation failed part way: a last chunk says so, with the statistics so far, and then
    /// the error is thrown.
    case error
}

/// Counts and timings of one generation: the usage (prompt, cached and completion tokens) and
/// the speeds.
public struct GenerationStatistics: Sendable, Equatable, Codable {
    /// Tokens in the prompt, cached ones included.
    public var promptTokens = 0
    /// Prompt tokens that were already in the state's cache and were not evaluated again.
    public var cachedPromptTokens = 0
    /// Tokens generated.
    public var completionTokens = 0
    /// Seconds spent evaluating the prompt.
    public var promptSeconds: Double = 0
    /// Seconds spent generating after the first token.
    public var generationSeconds: Double = 0
    /// Seconds from the start to the first generated token.
    public var timeToFirstToken: Double = 0

    /// Prompt tokens that were evaluated (not taken from the cache).
    public var evaluatedPromptTokens: Int { promptTokens - cachedPromptTokens }
    /// Prompt tokens evaluated per second.
    public var promptTokensPerSecond: Double {
        promptSeconds > 0 ? Double(evaluatedPromptTokens) / promptSeconds : 0
    }
    /// Tokens generated per second, after the first.
    public var tokensPerSecond: Double {
        generationSeconds > 0 ? Double(max(completionTokens - 1, 0)) / generationSeconds : 0
    }

    /// Zero counts and times.
    public init() {}
}

/// A piece of generated output.
public struct GenerationChunk: Sendable {
    /// Text completed by this token. It may be empty: while a character is split across tokens,
    /// or while the text might still be the start of a stop sequence.
    public var text: String
    /// The token, or nil on a final chunk that only carries the finish reason.
    public var token: Int32?
    /// The token's log-probability, when asked for.
    public var logprob: Float?
    /// The most likely alternatives at this step, when asked for.
    public var topLogprobs: [TokenLogprob] = []
    /// Set on the last chunk.
    public var finishReason: FinishReason?
    /// Set on the last chunk.
    public var statistics: GenerationStatistics?

    /// A chunk with the given parts.
    public init(text: String, token: Int32? = nil, logprob: Float? = nil, topLogprobs: [TokenLogprob] = [],
                finishReason: FinishReason? = nil, statistics: GenerationStatistics? = nil) {
        self.text = text
        self.token = token
        self.logprob = logprob
        self.topLogprobs = topLogprobs
        self.finishReason = finishReason
        self.statistics = statistics
    }
}

extension TransformerModel {
    /// Generates the continuation of `prompt`, calling `onChunk` for each token; return false
    /// from it to stop (finish reason `cancelled`).
    ///
    /// `prompt` is the whole sequence. Whatever `state` already holds that equals its beginning
    /// is reused rather than evaluated again (`cachedPromptTokens` counts it), so a conversation
    /// that grows turn by turn evaluates only its new tokens; the rest of the cache is dropped.
    /// The last chunk carries the finish reason and the statistics, which are also returned.
    ///
    /// With `options.format` `.json`, each token is sampled among those that keep the answer the
    /// beginning of one JSON object (`JSONTokenConstraint`), and generation stops (finish reason
    /// `stop`) with the token that completes it. `maxTokens`, the context's end, a stop sequence
    /// or cancellation can still cut the object short: the finish reason then says which. If no
    /// token can continue the object (a logit bias banning all of them), generation fails with
    /// `generationFailed`.
    @discardableResult
    public func generate(prompt: [Int32], options: GenerationOptions = .greedy, state: DecoderState,
                         onChunk: (GenerationChunk) throws -> Bool) throws -> GenerationStatistics {
        try options.validate(vocabularySize: configuration.vocabularySize)
        guard !prompt.isEmpty else { throw HearthError.invalidArgument("The prompt is empty.") }
        guard prompt.count < state.contextLength else {
            throw HearthError.contextOverflow(needed: prompt.count + 1, limit: state.contextLength)
        }
        let clock = ContinuousClock()
        let started = clock.now
        var stats = GenerationStatistics()
        stats.promptTokens = prompt.count

        // At least the last prompt token is evaluated again: its logits are the ones needed.
        let reused = min(state.commonPrefixLength(with: prompt), prompt.count - 1)
        state.rewind(to: reused)
        stats.cachedPromptTokens = reused
        var logits = try evaluate(Array(prompt[reused...]), state: state)
        let promptDone = clock.now
        stats.promptSeconds = (promptDone - started) / .seconds(1)

        var sampler = Sampler(options: options.sampling)
        var decoder = StreamingTextDecoder()
        var stops = StopSequenceMatcher(options.stop)
        let budget = min(options.maxTokens ?? Int.max, state.contextLength - prompt.count)
        let ends = tokenizer.endOfGenerationTokens
        let top = options.logprobs ? options.topLogprobs : 0
        var firstTokenAt = promptDone
        var reason = FinishReason.length
        // JSON mode: the answer so far, checked against the vocabulary's bytes.
        var json = options.format == .json ? JSONTokenConstraint(recognizer: JSONRecognizer(), table: tokenByteTable()) : nil
        var jsonComplete = false
        // What the sampler's penalties count: this prompt and the tokens generated after it.
        var history = prompt
        func fail(_ error: any Error) throws -> Never {
            stats.generationSeconds = (clock.now - firstTokenAt) / .seconds(1)
            _ = try? onChunk(GenerationChunk(text: "", finishReason: .error, statistics: stats))
            throw error
        }
        while stats.completionTokens < budget {
            var chunk = GenerationChunk(text: "")
            let picked: SampledToken? = logits.withUnsafeBufferPointer { values in
                switch (json, options.logprobs) {
                case (let constraint?, true):
                    return sampler.sampleWithLogprobs(values, history: history, top: top, constraint: constraint)
                case (let constraint?, false):
                    return sampler.sample(values, history: history, constraint: constraint)
                        .map { SampledToken(token: $0, logprob: 0, top: []) }
                case (nil, true):
                    return sampler.sampleWithLogprobs(values, history: history, top: top)
                case (nil, false):
                    return SampledToken(token: sampler.sample(values, history: history), logprob: 0, top: [])
                }
            }
            guard let picked else {
                try fail(HearthError.generationFailed(
                    "JSON mode: no token can continue the JSON object (does a logit bias ban them?)."))
            }
            let token = picked.token
            if options.logprobs {
                chunk.logprob = picked.logprob
                chunk.topLogprobs = picked.top
            }
            history.append(token)
            stats.completionTokens += 1
            if stats.completionTokens == 1 {
                firstTokenAt = clock.now
                stats.timeToFirstToken = (firstTokenAt - started) / .seconds(1)
            }
            if ends.contains(token) {
                reason = .stop
                break
            }
            let bytes = tokenizer.tokenBytes(token)
            if json != nil {
                // The sampler only returns allowed tokens; this guards the engine's own invariant.
                guard json!.recognizer.consume(bytes) else {
                    try fail(HearthError.generationFailed("JSON mode sampled token \(token), which breaks the object."))
                }
                jsonComplete = json!.recognizer.isComplete
            }
            let matched = stops.append(decoder.append(bytes))
            chunk.text = matched.text
            chunk.token = token
            guard try onChunk(chunk) else {
                reason = .cancelled
                break
            }
            if matched.stopped || jsonComplete {
                reason = .stop
                break
            }
            if stats.completionTokens == budget { break }
            do {
                logits = try evaluate([token], state: state)
            } catch {
                try fail(error)
            }
        }
        stats.generationSeconds = (clock.now - firstTokenAt) / .seconds(1)
        // Bytes of a character cut off by the end are dropped, never emitted as U+FFFD. Text held
        // back as a possible start of a stop sequence is emitted when the JSON object completes
        // (a matched stop sequence leaves none).
        var tail = ""
        if (reason != .stop && reason != .cancelled) || jsonComplete { tail = stops.flush() }
        _ = try onChunk(GenerationChunk(text: tail, finishReason: reason, statistics: stats))
        return stats
    }
}
