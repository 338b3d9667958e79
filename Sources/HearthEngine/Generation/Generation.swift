import Foundation

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
    /// Of the completion tokens, those of a reasoning model's thoughts (`<think>…</think>` and
    /// the tags).
    public var reasoningTokens = 0

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

    private enum CodingKeys: String, CodingKey {
        case promptTokens, cachedPromptTokens, completionTokens, promptSeconds, generationSeconds, timeToFirstToken, reasoningTokens
    }

    /// Decodes statistics; a missing `reasoningTokens` is 0, as statistics written before it
    /// existed mean.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        promptTokens = try c.decode(Int.self, forKey: .promptTokens)
        cachedPromptTokens = try c.decode(Int.self, forKey: .cachedPromptTokens)
        completionTokens = try c.decode(Int.self, forKey: .completionTokens)
        promptSeconds = try c.decode(Double.self, forKey: .promptSeconds)
        generationSeconds = try c.decode(Double.self, forKey: .generationSeconds)
        timeToFirstToken = try c.decode(Double.self, forKey: .timeToFirstToken)
        reasoningTokens = try c.decodeIfPresent(Int.self, forKey: .reasoningTokens) ?? 0
    }
}

/// A piece of generated output.
public struct GenerationChunk: Sendable {
    /// Text completed by this token. It may be empty: while a character is split across tokens,
    /// or while the text might still be the start of a stop sequence. For a reasoning model's
    /// chat, only the answer: its thoughts are in `reasoning`.
    public var text: String
    /// Thoughts completed by this token, for a model that reasons in `<think>…</think>` before
    /// answering (empty otherwise). The tags are not part of it.
    public var reasoning = ""
    /// The token, or nil on a final chunk that only carries the finish reason.
    public var token: Int32?
    /// The token's log-probability, when asked for.
    public var logprob: Float?
    /// The most likely alternatives at this step, when asked for.
    public var topLogprobs: [TokenLogprob] = []
    /// Set on the last chunk.
    public var finishReason: FinishReason?
    /// On the last chunk of a chat answer with tools: the calls the model made (their text is
    /// not in `text`).
    public var toolCalls: [ToolCall]?
    /// Set on the last chunk.
    public var statistics: GenerationStatistics?

    /// A chunk with the given parts.
    public init(text: String, reasoning: String = "", token: Int32? = nil, logprob: Float? = nil, topLogprobs: [TokenLogprob] = [],
                finishReason: FinishReason? = nil, statistics: GenerationStatistics? = nil) {
        self.text = text
        self.reasoning = reasoning
        self.token = token
        self.logprob = logprob
        self.topLogprobs = topLogprobs
        self.finishReason = finishReason
        self.statistics = statistics
    }
}

