import Foundation
import HearthFormats

/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// The model produced an end-of-generation token.
    case stop
    /// The requested number of tokens was reached, or the context filled up.
    case length
    /// The caller stopped it.
    case cancelled
    /// Something failed part way.
    case error
}

/// Counts and timings of one generation.
public struct GenerationStatistics: Sendable, Equatable, Codable {
    /// Tokens evaluated from the prompt.
    public var promptTokens = 0
    /// Tokens generated.
    public var generatedTokens = 0
    /// Seconds spent evaluating the prompt (the time to the first token, less sampling).
    public var promptSeconds: Double = 0
    /// Seconds spent generating after the first token.
    public var generationSeconds: Double = 0
    /// Seconds from the start to the first generated token.
    public var timeToFirstToken: Double = 0

    /// Prompt tokens evaluated per second.
    public var promptTokensPerSecond: Double { promptSeconds > 0 ? Double(promptTokens) / promptSeconds : 0 }
    /// Tokens generated per second, after the first.
    public var generationTokensPerSecond: Double {
        generationSeconds > 0 ? Double(max(generatedTokens - 1, 0)) / generationSeconds : 0
    }

    /// Zero counts and times.
    public init() {}
}

/// A piece of generated output.
public struct GenerationChunk: Sendable {
    /// Text completed by this token (may be empty while a character is split across tokens).
    public var text: String
    /// The token, or nil on a final chunk that only carries the finish reason.
    public var token: Int32?
    /// Set on the last chunk.
    public var finishReason: FinishReason?
    /// Set on the last chunk.
    public var statistics: GenerationStatistics?
}

extension TransformerModel {
    /// Generates up to `maxTokens` tokens after `prompt`, calling `onChunk` for each; return
    /// false from it to stop. The prompt is evaluated after whatever `state` already holds.
    /// The last chunk carries the finish reason and the statistics, which are also returned.
    @discardableResult
    public func generate(prompt: [Int32], maxTokens: Int, sampler: Sampler, state: DecoderState,
                         onChunk: (GenerationChunk) throws -> Bool) throws -> GenerationStatistics {
        guard maxTokens >= 0 else { throw HearthError.invalidArgument("maxTokens must not be negative.") }
        var sampler = sampler
        var stats = GenerationStatistics()
        var text = StreamingTextDecoder()
        let clock = ContinuousClock()
        let started = clock.now
        stats.promptTokens = prompt.count

        var logits = try evaluate(prompt, state: state)
        let promptDone = clock.now
        stats.promptSeconds = (promptDone - started) / .seconds(1)
        var firstTokenAt = promptDone
        var reason = FinishReason.length
        let ends = tokenizer.endOfGenerationTokens

        // What the sampler's penalties count: this prompt and the tokens generated after it.
        var history = prompt
        while stats.generatedTokens < maxTokens {
            let token = logits.withUnsafeBufferPointer { sampler.sample($0, history: history) }
            history.append(token)
            stats.generatedTokens += 1
            if stats.generatedTokens == 1 {
                firstTokenAt = clock.now
                stats.timeToFirstToken = (firstTokenAt - started) / .seconds(1)
            }
            if ends.contains(token) {
                reason = .stop
                break
            }
            let piece = text.append(tokenizer.tokenBytes(token))
            guard try onChunk(GenerationChunk(text: piece, token: token)) else {
                reason = .cancelled
                break
            }
            if stats.generatedTokens == maxTokens { break }
            if state.position >= state.contextLength {
                reason = .length
                break
            }
            logits = try evaluate([token], state: state)
        }
        stats.generationSeconds = (clock.now - firstTokenAt) / .seconds(1)
        _ = try onChunk(GenerationChunk(text: text.flush(), token: nil, finishReason: reason, statistics: stats))
        return stats
    }
}
