import Foundation
import HearthCore

/// Speech to text with a Whisper model, as faster-whisper's `transcribe` runs it: language
/// detection, then the 30-second window loop with timestamp tokens and the prompt of previous
/// text; each window decoded by beam search (or greedily), again by sampling at rising
/// temperatures when its text fails the thresholds, skipped when it holds no speech, and its
/// words aligned to the audio on request.
public final class Transcriber: @unchecked Sendable {
    public let model: WhisperModel
    public let tokenizer: WhisperTokenizer
    /// Tokens never generated (the model's `suppress_ids` and the task tokens).
    let suppressed: [Int]
    /// Tokens not generated first (a blank and end of text).
    let suppressedAtBegin: [Int]

    /// Cross-attention heads that follow the alignment of text to audio.
    let alignmentHeads: [(layer: Int, head: Int)]

    /// Loads a Whisper model folder or whisper.cpp file (see `WhisperFiles.load`).
    public convenience init(contentsOf directory: URL, threads: Int = ProcessInfo.processInfo.activeProcessorCount,
                            weights: WhisperWeights = .float) throws {
        try self.init(try WhisperFiles.load(directory, threads: threads, weights: weights))
    }

    public init(_ files: WhisperFiles) throws {
        model = files.model
        tokenizer = files.tokenizer
        let t = tokenizer
        suppressed = Array(Set(files.settings.suppressed + [t.transcribe, t.translate, t.startOfTranscript, t.startOfPrevious,
                                                           t.startOfLM, t.noSpeech])).sorted()
        suppressedAtBegin = files.settings.suppressedAtBegin ?? (t.encode(" ") + [t.endOfText])
        alignmentHeads = files.settings.alignmentHeads
        guard model.dimensions.vocabularySize > t.timestampBegin else {
            throw HearthError.invalidModelFile(path: model.path, reason: "its vocabulary has no room for timestamp tokens")
        }
    }

    /// Language probabilities of the window `mel` starts (the first 30 seconds), most likely first.
    public func detectLanguage(_ mel: LogMelSpectrogram) throws -> [(code: String, probability: Double)] {
        let encoded = encodeWindow(mel, from: 0, frames: min(mel.frameCount, model.dimensions.windowFrames))
        return try detectLanguage(encoded: encoded)
    }

    func detectLanguage(encoded: [Float]) throws -> [(code: String, probability: Double)] {
        let decoding = model.startDecoding(encoded)
        let logits = try model.decode([tokenizer.startOfTranscript], in: decoding)
        let languages = tokenizer.languages
        let largest = languages.map { Double(logits[$0.token]) }.max() ?? 0
        let weights = languages.map { Foundation.exp(Double(logits[$0.token]) - largest) }
        let total = weights.reduce(0, +)
        return zip(languages, weights).map { ($0.code, $1 / total) }.sorted { $0.probability > $1.probability }
    }

    /// The encoder's output for `frames` mel frames from `start`, zero-padded to a window.
    func encodeWindow(_ mel: LogMelSpectrogram, from start: Int, frames: Int) -> [Float] {
        let d = model.dimensions, window = d.windowFrames
        var segment = [Float](repeating: 0, count: d.melCount * window)
        for m in 0..<d.melCount {
            for f in 0..<frames { segment[m * window + f] = mel.values[m * mel.frameCount + start + f] }
        }
        return segment.withUnsafeBufferPointer { model.encode($0.baseAddress!, frameStride: window) }
    }

    /// Transcribes 16 kHz mono samples. `progress` hears the seconds of audio done after each
    /// window, with every segment that window finished; `isCancelled` is asked between decoding
    /// steps, and a true answer ends the transcription with `CancellationError`.
    public func transcribe(samples: [Float], config: TranscriptionConfig = TranscriptionConfig(),
                           progress: (_ secondsDone: Double, _ newSegments: [TranscriptionSegment]) -> Void = { _, _ in },
                           isCancelled: () -> Bool = { false }) throws -> Transcription {
        try config.validate()
        let d = model.dimensions, t = tokenizer
        guard !samples.isEmpty else { throw HearthError.invalidArgument("there is no audio to transcribe") }
        let mel = LogMelSpectrogram(samples: samples, melCount: d.melCount)
        let contentFrames = mel.frameCount - 1
        let framesPerSecond = 100.0
        let inputStride = d.windowFrames / d.audioContext

        var language = config.language.map { WhisperLanguages.code(of: $0) ?? $0 }
        var languageProbability = 1.0
        // Detection encodes the first window; when the audio fills it, the loop's first window
        // is the same input and reuses that encoding.
        var firstWindow: [Float]?
        if let code = language {
            guard t.languageToken(code) != nil else {
                throw HearthError.invalidArgument("\"\(code)\" is not a language this model knows; use one of \(t.languages.map(\.code).joined(separator: ", "))")
            }
        } else {
            let frames = min(mel.frameCount, d.windowFrames)
            let encoded = encodeWindow(mel, from: 0, frames: frames)
            let ranked = try detectLanguage(encoded: encoded)
            language = ranked[0].code
            languageProbability = ranked[0].probability
            if frames == min(d.windowFrames, contentFrames) { firstWindow = encoded }
        }
        let sotSequence = [t.startOfTranscript, t.languageToken(language!)!, config.translate ? t.translate : t.transcribe]
        let aligner = config.wordTimestamps
            ? WordAligner(model: model, tokenizer: tokenizer, heads: alignmentHeads, language: language!, sotSequence: sotSequence)
            : nil

        var generator = SeededGenerator(seed: config.seed)
        var allTokens: [Int] = []
        if let prompt = config.initialPrompt { allTokens += t.encode(" " + prompt.trimmingCharacters(in: .whitespaces)) }
        var promptResetSince = 0
        var segments: [TranscriptionSegment] = []
        var lastSpeechTime = 0.0
        var seek = 0
        while seek < contentFrames {
            if isCancelled() { throw CancellationError() }
            let timeOffset = Double(seek) / framesPerSecond
            let segmentSize = min(d.windowFrames, contentFrames - seek)
            let segmentDuration = Double(segmentSize) / framesPerSecond
            let encoded = seek == 0 ? firstWindow ?? encodeWindow(mel, from: seek, frames: segmentSize)
                : encodeWindow(mel, from: seek, frames: segmentSize)
            firstWindow = nil

            var prompt: [Int] = []
            let previous = Array(allTokens[promptResetSince...])
            if !previous.isEmpty {
                prompt.append(t.startOfPrevious)
                prompt += previous.suffix(d.textContext / 2 - 1)
            }
            prompt += sotSequence
            if config.withoutTimestamps { prompt.append(t.noTimestamps) }

            let decoding = model.startDecoding(encoded)
            let result = try generateWithFallback(decoding: decoding, prompt: prompt, config: config, generator: &generator,
                                                  isCancelled: isCancelled)
            if let threshold = config.noSpeechThreshold, result.noSpeechProbability > threshold,
               !(config.logProbThreshold.map { result.averageLogProbability > $0 } ?? false) {
                seek += segmentSize
                progress(Double(min(seek, contentFrames)) / framesPerSecond, [])
                continue
            }
            let windowStart = seek
            var (pieces, nextSeek, singleTimestampEnding) = split(result.tokens, timeOffset: timeOffset, segmentSize: segmentSize,
                                                                  segmentDuration: segmentDuration, seek: seek, inputStride: inputStride)
            seek = nextSeek
            if let aligner {
                try aligner.addWordTimestamps(to: &pieces, decoding: decoding, frames: segmentSize,
                                                               timeOffset: timeOffset, lastSpeechTime: lastSpeechTime)
                if !singleTimestampEnding, let end = WordAligner.lastEnd(pieces), end > timeOffset {
                    seek = Int((end * framesPerSecond).rounded(.toNearestOrEven))
                }
                if let end = WordAligner.lastEnd(pieces) { lastSpeechTime = end }
            }
            let before = segments.count
            for piece in pieces {
                let text = t.decode(piece.tokens)
                if piece.start == piece.end || text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { continue }
                allTokens += piece.tokens
                segments.append(TranscriptionSegment(seek: windowStart, start: piece.start, end: piece.end, text: text,
                                                     tokens: piece.tokens, temperature: result.temperature,
                                                     averageLogProbability: result.averageLogProbability,
                                                     compressionRatio: result.compressionRatio,
                                                     noSpeechProbability: result.noSpeechProbability,
                                                     words: aligner == nil ? nil : piece.words))
            }
            if !config.conditionOnPreviousText || result.temperature > config.promptResetOnTemperature {
                promptResetSince = allTokens.count
            }
            progress(Double(min(seek, contentFrames)) / framesPerSecond, Array(segments[before...]))
        }
        return Transcription(language: language!, languageProbability: languageProbability,
                             duration: Double(samples.count) / Double(AudioSamples.whisperRate), segments: segments)
    }

    /// What decoding a window gave, with the measures that decide whether to decode it again.
    struct WindowResult {
        var tokens: [Int]
        /// The log-probability of the tokens and the end of text, over their count.
        var averageLogProbability: Double
        var noSpeechProbability: Double
        var temperature: Double
        var compressionRatio: Double
    }

    /// Decodes a window at each temperature in turn until its text neither repeats itself
    /// (compression ratio) nor is unlikely (average log-probability), unless the window is
    /// silence; when every temperature fails, the likeliest result that does not repeat itself
    /// (faster-whisper's `generate_with_fallback`). The prompt is evaluated once for all tries.
    func generateWithFallback(decoding: WhisperModel.Decoding, prompt: [Int], config: TranscriptionConfig,
                              generator: inout SeededGenerator, isCancelled: () -> Bool) throws -> WindowResult {
        let d = model.dimensions, t = tokenizer
        let sotIndex = prompt.firstIndex(of: t.startOfTranscript)!
        let atStart = try model.decode(Array(prompt[...sotIndex]), in: decoding)
        let noSpeech = atStart.withUnsafeBufferPointer { Double($0[t.noSpeech] - Sampling.logSumExp($0)) }
        let start = sotIndex + 1 < prompt.count ? try model.decode(Array(prompt[(sotIndex + 1)...]), in: decoding) : atStart
        let rules = TokenRules(endOfText: t.endOfText, noTimestamps: t.noTimestamps, timestampBegin: t.timestampBegin,
                               suppressed: suppressed, suppressedAtBegin: suppressedAtBegin,
                               withoutTimestamps: config.withoutTimestamps,
                               maxInitialTimestamp: t.timestampBegin + Int((config.maxInitialTimestamp / WhisperTokenizer.timePrecision).rounded(.toNearestOrEven)))
        return try withoutActuallyEscaping(isCancelled) { isCancelled in
            let search = WindowSearch(model: model, rules: rules, endOfText: t.endOfText,
                                      maxLength: min(d.textContext / 2, d.textContext - (prompt.count - 1)), isCancelled: isCancelled)
            return try fallback(search: search, decoding: decoding, prompt: prompt, start: start, noSpeech: noSpeech,
                                config: config, generator: &generator)
        }
    }

    private func fallback(search: WindowSearch, decoding: WhisperModel.Decoding, prompt: [Int], start: [Float], noSpeech: Double,
                          config: TranscriptionConfig, generator: inout SeededGenerator) throws -> WindowResult {
        let t = tokenizer
        var all: [WindowResult] = []
        var notRepetitive: [WindowResult] = []
        let temperatures = config.temperatures
        for temperature in temperatures {
            decoding.reorder([0])
            decoding.truncate(0, to: prompt.count)
            let hypothesis: Hypothesis
            if temperature > 0 {
                hypothesis = try search.sample(decoding: decoding, start: start, count: config.bestOf, temperature: temperature,
                                               lengthPenalty: config.lengthPenalty, generator: &generator)
            } else if config.beamSize > 1 {
                hypothesis = try search.beam(decoding: decoding, start: start, beamSize: config.beamSize, patience: config.patience,
                                             lengthPenalty: config.lengthPenalty)
            } else {
                hypothesis = try search.greedy(decoding: decoding, start: start)
            }
            let text = t.decode(hypothesis.tokens).trimmingCharacters(in: .whitespacesAndNewlines)
            let result = WindowResult(tokens: hypothesis.tokens,
                                      averageLogProbability: Double(hypothesis.logProbability) / Double(hypothesis.tokens.count + 1),
                                      noSpeechProbability: Foundation.exp(noSpeech), temperature: temperature,
                                      compressionRatio: Sampling.compressionRatio(text))
            all.append(result)
            var fallBack = false
            if let threshold = config.compressionRatioThreshold {
                if result.compressionRatio > threshold { fallBack = true } else { notRepetitive.append(result) }
            }
            if let threshold = config.logProbThreshold, result.averageLogProbability < threshold { fallBack = true }
            if let silence = config.noSpeechThreshold, result.noSpeechProbability > silence,
               let threshold = config.logProbThreshold, result.averageLogProbability < threshold {
                fallBack = false
            }
            if !fallBack { return result }
        }
        var chosen = (notRepetitive.isEmpty ? all : notRepetitive).max { $0.averageLogProbability < $1.averageLogProbability }!
        chosen.temperature = temperatures.last!
        return chosen
    }

    /// A segment cut from a window's tokens, with its words once they are aligned.
    struct Piece {
        var start: Double
        var end: Double
        var tokens: [Int]
        var words: [TranscriptionWord] = []
    }

    /// Cuts a window's tokens into segments at timestamp pairs and says where the next window
    /// starts and whether the window ended on a single timestamp
    /// (faster-whisper's `_split_segments_by_timestamps`).
    func split(_ tokens: [Int], timeOffset: Double, segmentSize: Int, segmentDuration: Double, seek: Int,
               inputStride: Int) -> ([Piece], Int, Bool) {
        let begin = tokenizer.timestampBegin, precision = WhisperTokenizer.timePrecision
        var pieces: [Piece] = []
        var seek = seek
        let singleTimestampEnding = tokens.count >= 2 && tokens[tokens.count - 2] < begin && tokens[tokens.count - 1] >= begin
        let consecutive = tokens.indices.filter { $0 > 0 && tokens[$0] >= begin && tokens[$0 - 1] >= begin }
        if !consecutive.isEmpty {
            var slices = consecutive
            if singleTimestampEnding { slices.append(tokens.count) }
            var last = 0
            for current in slices {
                let sliced = Array(tokens[last..<current])
                pieces.append(Piece(start: timeOffset + Double(sliced[0] - begin) * precision,
                                    end: timeOffset + Double(sliced[sliced.count - 1] - begin) * precision, tokens: sliced))
                last = current
            }
            if singleTimestampEnding {
                seek += segmentSize
            } else {
                seek += (tokens[last - 1] - begin) * inputStride
            }
        } else {
            var duration = segmentDuration
            if let lastTimestamp = tokens.last(where: { $0 >= begin }), lastTimestamp != begin {
                duration = Double(lastTimestamp - begin) * precision
            }
            pieces.append(Piece(start: timeOffset, end: timeOffset + duration, tokens: tokens))
            seek += segmentSize
        }
        return (pieces, seek, singleTimestampEnding)
    }
}
