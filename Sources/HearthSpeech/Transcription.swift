import Foundation
import HearthCore

/// What to transcribe and how. The defaults are faster-whisper's: beam search over 5
/// hypotheses, and when a window's text looks wrong (it compresses too well, or its tokens are
/// unlikely) the window again by sampling at rising temperatures, best of 5.
public struct TranscriptionConfig: Sendable {
    /// The spoken language's code (`en`, `de`…), or nil to detect it from the first 30 seconds.
    public var language: String?
    /// Translate into English instead of transcribing.
    public var translate: Bool
    /// Text that comes before the audio, to steer spelling and style.
    public var initialPrompt: String?
    /// Each window's prompt holds the text of the windows before it.
    public var conditionOnPreviousText: Bool
    /// Text only, without timestamp tokens (one segment per window).
    public var withoutTimestamps: Bool
    /// The first timestamp of a window is at most this many seconds.
    public var maxInitialTimestamp: Double
    /// A window whose no-speech probability exceeds this (and whose average log-probability is
    /// below `logProbThreshold`) is skipped as silence.
    public var noSpeechThreshold: Double?
    /// A window's text whose average log-probability is below this is decoded again at the
    /// next temperature.
    public var logProbThreshold: Double?
    /// A window's text whose gzip compression ratio is above this (it repeats itself) is
    /// decoded again at the next temperature.
    public var compressionRatioThreshold: Double?
    /// Hypotheses kept by beam search at temperature 0; 1 decodes greedily.
    public var beamSize: Int
    /// Beam search ends once `beamSize × patience` hypotheses have finished.
    public var patience: Double
    /// Scores of finished hypotheses are divided by their length to this power (1: the plain
    /// average log-probability).
    public var lengthPenalty: Double
    /// The first temperature; 0 decodes by beam search (or greedily).
    public var temperature: Double
    /// When a window fails the thresholds, it is decoded again at `temperature` plus this, and
    /// so on up to 1; nil tries `temperature` alone.
    public var temperatureIncrement: Double?
    /// Samples drawn at a temperature above 0; the likeliest one is kept.
    public var bestOf: Int
    /// Above this temperature the next window's prompt leaves out the text before it.
    public var promptResetOnTemperature: Double
    /// Times for each word, from the alignment of the decoder's cross-attention to the audio.
    public var wordTimestamps: Bool
    /// Seeds the sampling at temperatures above 0: the same seed gives the same text.
    public var seed: UInt64

    public init(language: String? = nil, translate: Bool = false, initialPrompt: String? = nil,
                conditionOnPreviousText: Bool = true, withoutTimestamps: Bool = false, maxInitialTimestamp: Double = 1,
                noSpeechThreshold: Double? = 0.6, logProbThreshold: Double? = -1, compressionRatioThreshold: Double? = 2.4,
                beamSize: Int = 5, patience: Double = 1, lengthPenalty: Double = 1,
                temperature: Double = 0, temperatureIncrement: Double? = 0.2, bestOf: Int = 5,
                promptResetOnTemperature: Double = 0.5, wordTimestamps: Bool = false, seed: UInt64 = 0) {
        self.language = language
        self.translate = translate
        self.initialPrompt = initialPrompt
        self.conditionOnPreviousText = conditionOnPreviousText
        self.withoutTimestamps = withoutTimestamps
        self.maxInitialTimestamp = maxInitialTimestamp
        self.noSpeechThreshold = noSpeechThreshold
        self.logProbThreshold = logProbThreshold
        self.compressionRatioThreshold = compressionRatioThreshold
        self.beamSize = beamSize
        self.patience = patience
        self.lengthPenalty = lengthPenalty
        self.temperature = temperature
        self.temperatureIncrement = temperatureIncrement
        self.bestOf = bestOf
        self.promptResetOnTemperature = promptResetOnTemperature
        self.wordTimestamps = wordTimestamps
        self.seed = seed
    }

    /// Greedy decoding at temperature 0 with no fallback and no silence skipping: the fastest
    /// setting, and the one whose text depends only on the model.
    public static var greedy: TranscriptionConfig {
        TranscriptionConfig(noSpeechThreshold: nil, logProbThreshold: nil, compressionRatioThreshold: nil, beamSize: 1,
                            temperatureIncrement: nil)
    }

    /// The temperatures tried in turn.
    public var temperatures: [Double] {
        guard let increment = temperatureIncrement, increment > 0 else { return [temperature] }
        var values: [Double] = []
        var t = temperature
        while t <= 1 + 1e-6 {
            values.append(t)
            t += increment
        }
        return values.isEmpty ? [temperature] : values
    }

    /// Throws `HearthError.invalidArgument` naming the first setting out of range.
    public func validate() throws {
        func fail(_ message: String) -> HearthError { .invalidArgument(message) }
        guard (1...32).contains(beamSize) else { throw fail("beam size must be between 1 and 32, not \(beamSize)") }
        guard (1...32).contains(bestOf) else { throw fail("best of must be between 1 and 32, not \(bestOf)") }
        guard patience > 0, patience.isFinite else { throw fail("patience must be above 0") }
        guard lengthPenalty.isFinite else { throw fail("length penalty must be a number") }
        guard temperature >= 0, temperature <= 2, temperature.isFinite else {
            throw fail("temperature must be between 0 and 2, not \(temperature)")
        }
        if let increment = temperatureIncrement, !(increment >= 0 && increment <= 1) {
            throw fail("the temperature increment must be between 0 and 1")
        }
        guard maxInitialTimestamp >= 0, maxInitialTimestamp.isFinite else { throw fail("max initial timestamp must be 0 or more") }
        if let language, language.isEmpty { throw fail("the language code is empty; leave it out to detect the language") }
    }
}

/// A word and when it was said.
public struct TranscriptionWord: Sendable, Equatable, Codable {
    public var start: Double
    public var end: Double
    /// The word with the space before it, as the model wrote it (" Hello").
    public var word: String
    /// The likelihood the model gave the word's tokens.
    public var probability: Double

    public init(start: Double, end: Double, word: String, probability: Double) {
        self.start = start
        self.end = end
        self.word = word
        self.probability = probability
    }
}

/// A stretch of speech and its text.
public struct TranscriptionSegment: Sendable, Equatable {
    /// The mel frame (10 ms each) the segment's window started at.
    public var seek: Int
    public var start: Double
    public var end: Double
    public var text: String
    public var tokens: [Int]
    /// The temperature the window was decoded at.
    public var temperature: Double
    /// Average log-probability of the window's tokens.
    public var averageLogProbability: Double
    /// The gzip compression ratio of the window's text (high means repetitive).
    public var compressionRatio: Double
    /// Probability that the window holds no speech.
    public var noSpeechProbability: Double
    /// The segment's words with their times, when word timestamps were asked for.
    public var words: [TranscriptionWord]?
}

/// A transcription: the text, its segments and the language.
public struct Transcription: Sendable {
    public var text: String { segments.map(\.text).joined() }
    public var language: String
    public var languageProbability: Double
    /// Seconds of audio.
    public var duration: Double
    public var segments: [TranscriptionSegment]

    public init(language: String, languageProbability: Double, duration: Double, segments: [TranscriptionSegment]) {
        self.language = language
        self.languageProbability = languageProbability
        self.duration = duration
        self.segments = segments
    }
}
