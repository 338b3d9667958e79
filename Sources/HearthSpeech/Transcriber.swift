import Foundation
import HearthFormats

/// Speech to text with a Whisper model: the 30-second window loop with timestamp tokens,
/// language detection and the prompt of previous text, decoding greedily under Whisper's
/// token rules, as faster-whisper does with beam size 1 and temperature 0.
public final class Transcriber: @unchecked Sendable {
    public let model: WhisperModel
    public let tokenizer: WhisperTokenizer
    /// Tokens never generated (the model's `suppress_ids` and the task tokens).
    let suppressed: [Int]
    /// Tokens not generated first (a blank and end of text).
    let suppressedAtBegin: [Int]

    /// Cross-attention heads that follow the alignment of text to audio.
    let alignmentHeads: [(layer: Int, head: Int)]

    /// Loads a Whisper model folder (see `WhisperFiles.load`).
    public convenience init(contentsOf directory: URL, threads: Int = ProcessInfo.processInfo.activeProcessorCount) throws {
        try self.init(try WhisperFiles.load(directory, threads: threads))
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
    /// window, with every segment that window finished.
    public func transcribe(samples: [Float], config: TranscriptionConfig = TranscriptionConfig(),
                           progress: (_ secondsDone: Double, _ newSegments: [TranscriptionSegment]) -> Void = { _, _ in }) throws -> Transcription {
        let d = model.dimensions, t = tokenizer
        guard !samples.isEmpty else { throw HearthError.invalidArgument("there is no audio to transcribe") }
        let mel = LogMelSpectrogram(samples: samples, melCount: d.melCount)
        let contentFrames = mel.frameCount - 1
        let framesPerSecond = 100.0
        let inputStride = d.windowFrames / d.audioContext

        var language = config.language
        var languageProbability = 1.0
        if let code = language {
            guard t.languageToken(code) != nil else {
                throw HearthError.invalidArgument("\"\(code)\" is not a language this model knows; use one of \(t.languages.map(\.code).joined(separator: ", "))")
            }
        } else {
            let ranked = try detectLanguage(mel)
            language = ranked[0].code
            languageProbability = ranked[0].probability
        }
        let sotSequence = [t.startOfTranscript, t.languageToken(language!)!, config.translate ? t.translate : t.transcribe]

        var allTokens: [Int] = []
        if let prompt = config.initialPrompt { allTokens += t.encode(" " + prompt.trimmingCharacters(in: .whitespaces)) }
        var promptResetSince = 0
        var segments: [TranscriptionSegment] = []
        var seek = 0
        while seek < contentFrames {
            let timeOffset = Double(seek) / framesPerSecond
            let segmentSize = min(d.windowFrames, contentFrames - seek)
            let segmentDuration = Double(segmentSize) / framesPerSecond
            let encoded = encodeWindow(mel, from: seek, frames: segmentSize)

            var prompt: [Int] = []
            let previous = Array(allTokens[promptResetSince...])
            if !previous.isEmpty {
                prompt.append(t.startOfPrevious)
                prompt += previous.suffix(d.textContext / 2 - 1)
            }
            prompt += sotSequence
            if config.withoutTimestamps { prompt.append(t.noTimestamps) }

            let result = try generate(encoded: encoded, prompt: prompt, config: config)
            if let threshold = config.noSpeechThreshold, result.noSpeechProbability > threshold,
               !(config.logProbThreshold.map { result.averageLogProbability > $0 } ?? false) {
                seek += segmentSize
                progress(Double(min(seek, contentFrames)) / framesPerSecond, [])
                continue
            }
            let before = segments.count, windowStart = seek
            let (pieces, nextSeek) = split(result.tokens, timeOffset: timeOffset, segmentSize: segmentSize,
                                           segmentDuration: segmentDuration, seek: seek, inputStride: inputStride)
            seek = nextSeek
            for piece in pieces {
                let text = t.decode(piece.tokens)
                if piece.start == piece.end || text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { continue }
                allTokens += piece.tokens
                segments.append(TranscriptionSegment(seek: windowStart, start: piece.start, end: piece.end, text: text, tokens: piece.tokens,
                                                     temperature: 0, averageLogProbability: result.averageLogProbability,
                                                     compressionRatio: 0, noSpeechProbability: result.noSpeechProbability, words: nil))
            }
            if !config.conditionOnPreviousText { promptResetSince = allTokens.count }
            progress(Double(min(seek, contentFrames)) / framesPerSecond, Array(segments[before...]))
        }
        return Transcription(language: language!, languageProbability: languageProbability,
                             duration: Double(samples.count) / Double(AudioSamples.whisperRate), segments: segments)
    }

    struct Generated {
        var tokens: [Int]
        var averageLogProbability: Double
        var noSpeechProbability: Double
    }

    /// Greedy decoding of one window after `prompt`, under Whisper's rules: no blank or end of
    /// text first, suppressed tokens never, timestamps in pairs, never decreasing, the first
    /// one within `maxInitialTimestamp`, and a timestamp whenever all timestamps together are
    /// likelier than any text token.
    func generate(encoded: [Float], prompt: [Int], config: TranscriptionConfig) throws -> Generated {
        let d = model.dimensions, t = tokenizer
        let decoding = model.startDecoding(encoded)
        let sotIndex = prompt.firstIndex(of: t.startOfTranscript)!
        let atStart = try model.decode(Array(prompt[...sotIndex]), in: decoding)
        let noSpeech = Self.logSoftmax(atStart)[t.noSpeech]
        var logits = sotIndex + 1 < prompt.count ? try model.decode(Array(prompt[(sotIndex + 1)...]), in: decoding) : atStart
        let maxInitial = Int((config.maxInitialTimestamp / WhisperTokenizer.timePrecision).rounded())
        var tokens: [Int] = []
        var sumLogProbability = 0.0
        while true {
            apply(rules: &logits, generated: tokens, config: config, maxInitial: maxInitial)
            var best = 0
            for i in 1..<logits.count where logits[i] > logits[best] { best = i }
            sumLogProbability += Self.logSoftmax(logits)[best]
            if best == t.endOfText { break }
            tokens.append(best)
            if prompt.count + tokens.count >= d.textContext { break }
            logits = try model.decode([best], in: decoding)
        }
        return Generated(tokens: tokens, averageLogProbability: sumLogProbability / Double(tokens.count + 1),
                         noSpeechProbability: Foundation.exp(noSpeech))
    }

    func apply(rules logits: inout [Float], generated tokens: [Int], config: TranscriptionConfig, maxInitial: Int) {
        let t = tokenizer, begin = t.timestampBegin, vocabulary = logits.count
        if tokens.isEmpty { for s in suppressedAtBegin where s < vocabulary { logits[s] = -.infinity } }
        for s in suppressed where s < vocabulary { logits[s] = -.infinity }
        if config.withoutTimestamps {
            for i in begin..<vocabulary { logits[i] = -.infinity }
            return
        }
        logits[t.noTimestamps] = -.infinity
        let lastWasTimestamp = tokens.last.map { $0 >= begin } ?? false
        let penultimateWasTimestamp = tokens.count < 2 || tokens[tokens.count - 2] >= begin
        if lastWasTimestamp {
            if penultimateWasTimestamp {
                for i in begin..<vocabulary { logits[i] = -.infinity }
            } else {
                for i in 0..<t.endOfText { logits[i] = -.infinity }
            }
        }
        if let lastTimestamp = tokens.last(where: { $0 >= begin }) {
            let bound = lastWasTimestamp && !penultimateWasTimestamp ? lastTimestamp : lastTimestamp + 1
            for i in begin..<min(bound, vocabulary) { logits[i] = -.infinity }
        }
        if tokens.isEmpty {
            for i in 0..<begin { logits[i] = -.infinity }
            for i in min(vocabulary, begin + maxInitial + 1)..<vocabulary { logits[i] = -.infinity }
        }
        let logProbabilities = Self.logSoftmax(logits)
        let textBest = logProbabilities[..<begin].max() ?? -.infinity
        let timestampLargest = logProbabilities[begin...].max() ?? -.infinity
        if timestampLargest > -.infinity {
            let timestampTotal = timestampLargest + Foundation.log(logProbabilities[begin...].reduce(0) { $0 + Foundation.exp($1 - timestampLargest) })
            if timestampTotal > textBest { for i in 0..<begin { logits[i] = -.infinity } }
        }
    }

    static func logSoftmax(_ logits: [Float]) -> [Double] {
        let largest = Double(logits.max() ?? 0)
        let total = logits.reduce(0.0) { $0 + Foundation.exp(Double($1) - largest) }
        let shift = largest + Foundation.log(total)
        return logits.map { Double($0) - shift }
    }

    /// Cuts a window's tokens into segments at timestamp pairs and says where the next window
    /// starts (faster-whisper's `_split_segments_by_timestamps`).
    func split(_ tokens: [Int], timeOffset: Double, segmentSize: Int, segmentDuration: Double, seek: Int,
               inputStride: Int) -> ([(start: Double, end: Double, tokens: [Int])], Int) {
        let begin = tokenizer.timestampBegin, precision = WhisperTokenizer.timePrecision
        var pieces: [(start: Double, end: Double, tokens: [Int])] = []
        var seek = seek
        let singleTimestampEnding = tokens.count >= 2 && tokens[tokens.count - 2] < begin && tokens[tokens.count - 1] >= begin
        let consecutive = tokens.indices.filter { $0 > 0 && tokens[$0] >= begin && tokens[$0 - 1] >= begin }
        if !consecutive.isEmpty {
            var slices = consecutive
            if singleTimestampEnding { slices.append(tokens.count) }
            var last = 0
            for current in slices {
                let sliced = Array(tokens[last..<current])
                pieces.append((timeOffset + Double(sliced[0] - begin) * precision,
                               timeOffset + Double(sliced[sliced.count - 1] - begin) * precision, sliced))
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
            pieces.append((timeOffset, timeOffset + duration, tokens))
            seek += segmentSize
        }
        return (pieces, seek)
    }
}
