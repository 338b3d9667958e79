import Foundation
import HearthFormats
import HearthSpeech
import HearthTestSupport
import Testing

/// faster-whisper's outputs on the pocketsphinx clips (scripts/make-whisper-fixtures.py).
struct FasterWhisperFixture: Decodable {
    struct Segment: Decodable {
        let start: Double
        let end: Double
        let text: String
        let tokens: [Int]
        let no_speech_prob: Double
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
