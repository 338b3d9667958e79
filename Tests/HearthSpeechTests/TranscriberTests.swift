import Foundation
import Synchronization
import HearthSpeech
import HearthTestSupport
import Testing

/// faster-whisper's outputs on the pocketsphinx clips (scripts/make-whisper-fixtures.py).
struct FasterWhisperFixture: Decodable {
    struct Word: Decodable {
        let start: Double
        let end: Double
        let word: String
        let probability: Double
    }
    struct Segment: Decodable {
        let seek: Int
        let start: Double
        let end: Double
        let text: String
        let tokens: [Int]
        let temperature: Double
        let avg_logprob: Double
        let compression_ratio: Double
        let no_speech_prob: Double
        let words: [Word]?
    }
    struct Result: Decodable {
        let text: String
        let segments: [Segment]
    }
    struct Clip: Decodable {
        let clip: String
        let language: String
        let language_probability: Double
        let language_probabilities: [String: Double]
        let greedy: Result
        let `default`: Result
        let greedy_words: Result
        let default_words: Result
    }
    /// espeak-ng speech in other languages.
    struct Spoken: Decodable {
        let voice: String
        let text: String
        let samples: Int
        let language: String
        let language_probability: Double
        let translation: String
    }
    let clips: [Clip]
    let spoken: [Spoken]

    static func load() throws -> FasterWhisperFixture {
        try JSONDecoder().decode(FasterWhisperFixture.self, from: Data(contentsOf: SpeechClips.fixture("faster-whisper.json")))
    }
}

/// One Whisper base for the suite: loading converts 74M weights.
enum WhisperBase {
    static let transcriber = Result { try Transcriber(contentsOf: TestFiles.modelURL("whisper-base"), threads: 2) }

    /// Each clip's transcription with the default settings, made once for the tests that read it.
    static func defaults(_ clip: String) throws -> Transcription {
        if let known = made.withLock({ $0[clip] }) { return known }
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip))
        let result = try transcriber.get().transcribe(samples: audio.samples)
        made.withLock { $0[clip] = result }
        return result
    }
    private static let made = Mutex<[String: Transcription]>([:])
}

@Suite(.serialized) struct TranscriberTests {
    /// Greedy decoding (beam 1, temperature 0, no fallback) gives faster-whisper's text exactly,
    /// its tokens, its segment times within 20 ms, and its language, on every librivox and cards clip.
    @Test(arguments: try FasterWhisperFixture.load().clips.map(\.clip))
    func greedyTextEqualsFasterWhisper(clip: String) throws {
        let transcriber = try WhisperBase.transcriber.get()
        let expected = try #require(try FasterWhisperFixture.load().clips.first { $0.clip == clip })
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip))
        let result = try transcriber.transcribe(samples: audio.samples,
                                                config: .greedy)
        #expect(result.language == expected.language)
        #expect(abs(result.languageProbability - expected.language_probability) < 1e-3)
        #expect(result.text == expected.greedy.text)
        #expect(result.segments.map(\.tokens) == expected.greedy.segments.map(\.tokens))
        #expect(result.segments.count == expected.greedy.segments.count)
        for (got, want) in zip(result.segments, expected.greedy.segments) {
            #expect(abs(got.start - want.start) <= 0.02 && abs(got.end - want.end) <= 0.02, "\(got.start)-\(got.end) vs \(want.start)-\(want.end)")
            #expect(abs(got.noSpeechProbability - want.no_speech_prob) < 1e-3)
        }
    }

    /// The language probabilities of the first window equal faster-whisper's.
    @Test func languageProbabilities() throws {
        let transcriber = try WhisperBase.transcriber.get()
        let expected = try FasterWhisperFixture.load().clips[0]
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(expected.clip))
        let ranked = try transcriber.detectLanguage(LogMelSpectrogram(samples: audio.samples))
        for (code, probability) in expected.language_probabilities {
            let got = try #require(ranked.first { $0.code == code })
            #expect(abs(got.probability - probability) < 1e-3, "\(code): \(got.probability) vs \(probability)")
        }
    }

    /// espeak-ng speech in German, French and Spanish, made as the fixture script makes it:
    /// the detected language and its probability agree with faster-whisper's, and greedy
    /// translation into English gives its text.
    @Test(arguments: try FasterWhisperFixture.load().spoken.map(\.voice))
    func otherLanguagesAndTranslation(voice: String) throws {
        let transcriber = try WhisperBase.transcriber.get()
        let expected = try #require(try FasterWhisperFixture.load().spoken.first { $0.voice == voice })
        let directory = try TemporaryDirectory()
        let wav = directory.file("speech.wav")
        try Tools.speech(expected.text, options: ["-v", voice], to: wav)
        let audio = try AudioSamples.load(contentsOf: wav)
        #expect(audio.samples.count == expected.samples)
        let ranked = try transcriber.detectLanguage(LogMelSpectrogram(samples: audio.samples))
        #expect(ranked[0].code == expected.language)
        #expect(abs(ranked[0].probability - expected.language_probability) < 0.01)
        let translated = try transcriber.transcribe(samples: audio.samples, config: TranscriptionConfig(translate: true, beamSize: 1, temperatureIncrement: nil))
        #expect(translated.language == expected.language)
        #expect(translated.text == expected.translation)
    }
}

/// Segments compared with faster-whisper's: the same text and tokens, times within 20 ms, the
/// same decoding temperature and compression ratio, log-probabilities within 2e-3, and the same
/// words within 20 ms and probabilities within 2e-3.
func expectSegments(_ got: [TranscriptionSegment], equal want: [FasterWhisperFixture.Segment],
                    sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(got.map(\.text) == want.map(\.text), sourceLocation: sourceLocation)
    #expect(got.map(\.tokens) == want.map(\.tokens), sourceLocation: sourceLocation)
    guard got.count == want.count else { return }
    for (g, w) in zip(got, want) {
        #expect(g.seek == w.seek, sourceLocation: sourceLocation)
        #expect(abs(g.start - w.start) <= 0.02 && abs(g.end - w.end) <= 0.02,
                "\(g.start)-\(g.end) vs \(w.start)-\(w.end)", sourceLocation: sourceLocation)
        #expect(g.temperature == w.temperature, sourceLocation: sourceLocation)
        #expect(abs(g.averageLogProbability - w.avg_logprob) < 2e-3, "\(g.averageLogProbability) vs \(w.avg_logprob)",
                sourceLocation: sourceLocation)
        #expect(abs(g.compressionRatio - w.compression_ratio) < 1e-9, sourceLocation: sourceLocation)
        #expect(abs(g.noSpeechProbability - w.no_speech_prob) < 1e-3, sourceLocation: sourceLocation)
        #expect((g.words == nil) == (w.words == nil), sourceLocation: sourceLocation)
        guard let gw = g.words, let ww = w.words else { continue }
        #expect(gw.map(\.word) == ww.map(\.word), sourceLocation: sourceLocation)
        guard gw.count == ww.count else { continue }
        for (a, b) in zip(gw, ww) {
            #expect(abs(a.start - b.start) <= 0.02 && abs(a.end - b.end) <= 0.02,
                    "\(a.word): \(a.start)-\(a.end) vs \(b.start)-\(b.end)", sourceLocation: sourceLocation)
            #expect(abs(a.probability - b.probability) < 2e-3, "\(a.word): \(a.probability) vs \(b.probability)",
                    sourceLocation: sourceLocation)
        }
    }
}

/// The human transcripts of the clips (pocketsphinx's `transcription` files).
enum HumanTranscripts {
    static func load() throws -> [String: String] {
        var result: [String: String] = [:]
        for (folder, file) in [("librivox", "transcription"), ("cards", "cards.transcription")] {
            let text = try String(contentsOf: SpeechClips.url("\(folder)/\(file)"), encoding: .utf8)
            for line in text.split(separator: "\n") {
                guard let open = line.lastIndex(of: "("), let close = line.lastIndex(of: ")") else { continue }
                let id = String(line[line.index(after: open)..<close])
                let words = line[..<open].replacingOccurrences(of: "<s>", with: "").replacingOccurrences(of: "</s>", with: "")
                result["\(folder)/\(id).wav"] = words.trimmingCharacters(in: .whitespaces)
            }
        }
        return result
    }

    /// Lower case words with punctuation and hyphens as spaces.
    static func words(_ text: String) -> [String] {
        let kept = text.lowercased().map { $0.isLetter || $0.isNumber || $0 == "'" ? $0 : " " }
        return String(kept).split(separator: " ").map(String.init)
    }

    /// Word-level edit distance.
    static func errors(_ hypothesis: [String], _ reference: [String]) -> Int {
        var row = Array(0...reference.count)
        for (i, h) in hypothesis.enumerated() {
            var next = [i + 1] + Array(repeating: 0, count: reference.count)
            for (j, r) in reference.enumerated() {
                next[j + 1] = min(row[j] + (h == r ? 0 : 1), row[j + 1] + 1, next[j] + 1)
            }
            row = next
        }
        return row[reference.count]
    }
}

@Suite(.serialized) struct DecodingStrategyTests {
    /// With faster-whisper's defaults (beam search over 5, temperature fallback, silence
    /// skipping) every clip's segments equal its own.
    @Test(arguments: try FasterWhisperFixture.load().clips.map(\.clip))
    func defaultsAsFasterWhisper(clip: String) throws {
        let expected = try #require(try FasterWhisperFixture.load().clips.first { $0.clip == clip })
        let result = try WhisperBase.defaults(clip)
        #expect(result.text == expected.default.text)
        expectSegments(result.segments, equal: expected.default.segments)
    }

    /// With the defaults, the word error rate over all clips against the human transcripts is
    /// no worse than faster-whisper's.
    @Test func wordErrorRateNoWorseThanFasterWhisper() throws {
        let human = try HumanTranscripts.load()
        var ours = 0, theirs = 0, total = 0
        for clip in try FasterWhisperFixture.load().clips {
            let reference = HumanTranscripts.words(try #require(human[clip.clip]))
            let result = try WhisperBase.defaults(clip.clip)
            ours += HumanTranscripts.errors(HumanTranscripts.words(result.text), reference)
            theirs += HumanTranscripts.errors(HumanTranscripts.words(clip.default.text), reference)
            total += reference.count
        }
        #expect(total > 50)
        #expect(ours <= theirs, "word error rate \(Double(ours) / Double(total)) vs faster-whisper's \(Double(theirs) / Double(total))")
    }

    /// Q8_0 on request: the matrices take well under half the memory, the greedy word error
    /// rate over all clips stays within 2 points of faster-whisper's float one, and a whisper.cpp
    /// Q8_0 file, whose blocks are used as they are, decodes to the same tokens as the
    /// faster-whisper folder rounded to Q8_0 at load (ggml's rounding in both).
    @Test func q8_0WeightsOnRequest() throws {
        let float = try WhisperBase.transcriber.get()
        let q8 = try Transcriber(contentsOf: TestFiles.modelURL("whisper-base"), threads: 2, weights: .q8_0)
        let file = try Transcriber(WhisperFiles.load(WhisperLayouts.ggmlQ8_0, threads: 2, weights: .q8_0))
        #expect(q8.model.weights == .q8_0 && float.model.weights == .float)
        #expect(Double(q8.model.matrixBytes) < 0.45 * Double(float.model.matrixBytes),
                "\(q8.model.matrixBytes) bytes vs \(float.model.matrixBytes)")
        #expect(file.model.matrixBytes == q8.model.matrixBytes)
        let human = try HumanTranscripts.load()
        var ours = 0, theirs = 0, total = 0
        for (i, clip) in try FasterWhisperFixture.load().clips.enumerated() {
            let reference = HumanTranscripts.words(try #require(human[clip.clip]))
            let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip.clip))
            let result = try q8.transcribe(samples: audio.samples, config: .greedy)
            #expect(result.language == clip.language)
            ours += HumanTranscripts.errors(HumanTranscripts.words(result.text), reference)
            theirs += HumanTranscripts.errors(HumanTranscripts.words(clip.greedy.text), reference)
            total += reference.count
            if i < 3 {
                let fromFile = try file.transcribe(samples: audio.samples, config: .greedy)
                #expect(fromFile.segments.map(\.tokens) == result.segments.map(\.tokens), "\(clip.clip)")
            }
        }
        #expect(total > 50)
        #expect(Double(ours) <= Double(theirs) + 0.02 * Double(total),
                "Q8_0 word error rate \(Double(ours) / Double(total)) vs faster-whisper float's \(Double(theirs) / Double(total))")
    }

    /// Word timestamps, greedy and with the defaults: faster-whisper's words, times and
    /// probabilities, and the segment times they move.
    @Test(arguments: try FasterWhisperFixture.load().clips.map(\.clip))
    func wordTimestampsAsFasterWhisper(clip: String) throws {
        let transcriber = try WhisperBase.transcriber.get()
        let expected = try #require(try FasterWhisperFixture.load().clips.first { $0.clip == clip })
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip))
        var greedy = TranscriptionConfig(beamSize: 1, temperatureIncrement: nil)
        greedy.wordTimestamps = true
        let result = try transcriber.transcribe(samples: audio.samples, config: greedy)
        expectSegments(result.segments, equal: expected.greedy_words.segments)
        let defaults = try transcriber.transcribe(samples: audio.samples, config: TranscriptionConfig(wordTimestamps: true))
        expectSegments(defaults.segments, equal: expected.default_words.segments)
    }

    /// Sampling is seeded: the same seed gives the same text, and a window that fails every
    /// threshold is decoded at each temperature and reported at the last one.
    @Test func fallbackSamplesAtEveryTemperatureAndIsSeeded() throws {
        let transcriber = try WhisperBase.transcriber.get()
        let clip = try FasterWhisperFixture.load().clips[0]
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip.clip))
        // A log-probability no text reaches makes every temperature fail.
        let config = TranscriptionConfig(noSpeechThreshold: nil, logProbThreshold: 0, seed: 7)
        let first = try transcriber.transcribe(samples: audio.samples, config: config)
        let again = try transcriber.transcribe(samples: audio.samples, config: config)
        #expect(first.segments.map(\.tokens) == again.segments.map(\.tokens))
        #expect(!first.segments.isEmpty)
        #expect(first.segments.allSatisfy { $0.temperature == 1.0 })
        // The likeliest result wins, so nothing sampled beats the beam's average log-probability.
        let beam = try transcriber.transcribe(samples: audio.samples, config: TranscriptionConfig(noSpeechThreshold: nil, temperatureIncrement: nil))
        #expect(first.segments[0].averageLogProbability >= beam.segments[0].averageLogProbability - 1e-9)
        // Sampling alone, at temperature 1: different seeds give different draws somewhere.
        var texts: Set<String> = []
        for seed in 1...4 {
            let sampled = TranscriptionConfig(noSpeechThreshold: nil, logProbThreshold: nil, compressionRatioThreshold: nil,
                                              temperature: 1, temperatureIncrement: nil, bestOf: 1, seed: UInt64(seed))
            texts.insert(try transcriber.transcribe(samples: audio.samples, config: sampled).text)
        }
        #expect(texts.count > 1)
    }

    /// Settings out of range are errors that name them; a cancelled transcription stops.
    @Test func badSettingsAndCancellation() throws {
        let transcriber = try WhisperBase.transcriber.get()
        let samples = [Float](repeating: 0.01, count: 16_000)
        for (config, name) in [(TranscriptionConfig(beamSize: 0), "beam size"), (TranscriptionConfig(temperature: -1), "temperature"),
                               (TranscriptionConfig(bestOf: 0), "best of"), (TranscriptionConfig(patience: 0), "patience")] {
            #expect { try transcriber.transcribe(samples: samples, config: config) } throws: { error in
                "\(error)".contains(name)
            }
        }
        #expect(throws: CancellationError.self) {
            try transcriber.transcribe(samples: samples, config: TranscriptionConfig(language: "en"), isCancelled: { true })
        }
    }
}

/// The pieces of word alignment on small inputs whose answers are known.
struct WordAlignmentUnitTests {
    @Test func dynamicTimeWarpingFollowsTheLargestValues() {
        // Row 0 is large at columns 0-1, row 1 at column 2, row 2 at columns 3-4; every other
        // cell costs, so the path takes no step it does not need.
        let x: [Float] = [5, 5, -1, -1, -1,
                          -1, -1, 5, -1, -1,
                          -1, -1, -1, 5, 5]
        let path = WordAligner.negativeDTW(x, rows: 3, columns: 5)
        #expect(path.map(\.row) == [0, 0, 1, 2, 2])
        #expect(path.map(\.column) == [0, 1, 2, 3, 4])
    }

    @Test func medianFilterMirrorsItsEdges() {
        let x: [Float] = [9, 1, 2, 3, 4, 5, 6, 7]
        var out = [Float](repeating: 0, count: x.count)
        x.withUnsafeBufferPointer { WordAligner.medianFilter($0, into: &out) }
        // Position 0 sees 3 2 1 9 1 2 3 (mirrored), median 2; position 7 sees 4 5 6 7 6 5 4.
        #expect(out == [2, 2, 3, 4, 4, 5, 5, 5])
        let short: [Float] = [3, 1, 2]
        var shortOut = [Float](repeating: 0, count: 3)
        short.withUnsafeBufferPointer { WordAligner.medianFilter($0, into: &shortOut) }
        #expect(shortOut == short)
    }

    @Test func punctuationJoinsItsWord() {
        func timing(_ word: String) -> WordAligner.Timing { .init(word: word, tokens: [word.count], start: 0, end: 0, probability: 1) }
        var alignment = [" \"", "Hello", ",", " world", ".", "\""].map(timing)
        WordAligner.mergePunctuation(&alignment)
        #expect(alignment.map(\.word) == ["", " \"Hello,", "", " world.\"", "", ""])
        #expect(alignment[1].tokens.count == 3)
    }

    /// Values Python's `len(s) / len(zlib.compress(s))` gives.
    @Test func compressionRatioIsZlibs() {
        #expect(Sampling.compressionRatio("") == 0)
        #expect(abs(Sampling.compressionRatio("He was not an ill-disposed young man.") - 37.0 / 45.0) < 1e-12)
        #expect(Sampling.compressionRatio(String(repeating: "the same words again ", count: 20)) > 2.4)
    }
}
