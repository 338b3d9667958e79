import Foundation
import Hearth

// Wire types of OpenAI's speech to text; they mirror OpenAI's names.

/// The answers /v1/audio gives, by OpenAI's names.
enum AudioResponseFormat: String, CaseIterable, Sendable {
    case json, text, srt, verbose_json, vtt
}

/// What an audio request asks for, read from its form fields.
struct AudioRequest: Sendable {
    var format: AudioResponseFormat
    var config: TranscriptionConfig
    /// Which lists verbose_json carries: segments unless only words were asked for, as OpenAI.
    var segments: Bool
    var words: Bool

    /// Fields of OpenAI's API that would change the answer and that Whisper models here do not
    /// implement: refused rather than silently ignored.
    static let unsupportedFields = ["include", "chunking_strategy", "known_speaker_names", "known_speaker_references", "languages"]

    init(_ upload: AudioUpload, translate: Bool) throws {
        if let stream = upload.field("stream"), stream.lowercased() != "false" {
            throw ServerError.badRequest(
                "stream=\(stream) is not supported: Hearth answers an audio request once the whole file is transcribed. Leave stream out or send false.",
                param: "stream")
        }
        for name in Self.unsupportedFields where !upload.values(name).isEmpty {
            throw ServerError.badRequest("\(name) is not supported by Hearth's Whisper models; leave it out.", param: name)
        }
        let formatName = upload.field("response_format") ?? "json"
        guard let format = AudioResponseFormat(rawValue: formatName) else {
            throw ServerError.badRequest(
                "response_format '\(formatName)' is not supported; use \(AudioResponseFormat.allCases.map(\.rawValue).joined(separator: ", ")).",
                param: "response_format")
        }
        self.format = format

        var language: String?
        if let given = upload.field("language") {
            guard let code = WhisperLanguages.code(of: given.trimmingCharacters(in: .whitespaces)) else {
                throw ServerError.badRequest(
                    "language '\(given)' is not one Whisper knows; use an ISO-639-1 code such as en, de or fr, or leave it out to detect the language.",
                    param: "language")
            }
            language = code
        }

        let granularities = upload.values("timestamp_granularities")
        if let unknown = granularities.first(where: { $0 != "word" && $0 != "segment" }) {
            throw ServerError.badRequest("timestamp_granularities '\(unknown)' is not one of word and segment.", param: "timestamp_granularities")
        }
        // OpenAI refuses word timestamps outside verbose_json too: no other format can carry them.
        if granularities.contains("word"), format != .verbose_json {
            throw ServerError.badRequest(
                "Word timestamps come only in verbose_json: send response_format=verbose_json with timestamp_granularities[]=word.",
                param: "timestamp_granularities")
        }
        let wantsWords = granularities.contains("word")
        words = wantsWords
        segments = granularities.isEmpty || granularities.contains("segment")

        var config = TranscriptionConfig(language: language, translate: translate, initialPrompt: upload.field("prompt"), wordTimestamps: wantsWords)
        if let text = upload.field("temperature") {
            // OpenAI's range. From this temperature the fallback rises by 0.2 when a window's
            // text looks wrong, which is what OpenAI describes for 0.
            guard let temperature = Double(text), temperature.isFinite, (0...1).contains(temperature) else {
                throw ServerError.badRequest("temperature must be a number between 0 and 1, not '\(text)'.", param: "temperature")
            }
            config.temperature = temperature
        }
        try config.validate()
        self.config = config
    }
}

/// OpenAI's `usage` for audio: billed by duration.
struct AudioUsage: Encodable, Sendable {
    var type = "duration"
    var seconds: Int

    init(duration: Double) { seconds = Int(duration.rounded(.up)) }
}

/// The verbose_json answer.
struct VerboseTranscription: Encodable, Sendable {
    var task: String
    var language: String
    var duration: Double
    var text: String
    var segments: [Segment]?
    var words: [Word]?
    var usage: AudioUsage

    struct Segment: Encodable, Sendable {
        var id: Int
        var seek: Int
        var start: Double
        var end: Double
        var text: String
        var tokens: [Int]
        var temperature: Double
        var avg_logprob: Double
        var compression_ratio: Double
        var no_speech_prob: Double
    }

    struct Word: Encodable, Sendable {
        var word: String
        var start: Double
        var end: Double
    }

    init(_ result: Transcription, request: AudioRequest) throws {
        task = request.config.translate ? "translate" : "transcribe"
        // A translation's language is that of its text, as OpenAI answers.
        language = request.config.translate ? "english" : WhisperLanguages.name(of: result.language) ?? result.language
        duration = result.duration
        text = result.text.trimmingCharacters(in: .whitespaces)
        usage = AudioUsage(duration: result.duration)
        if request.segments {
            segments = result.segments.enumerated().map { index, segment in
                Segment(id: index, seek: segment.seek, start: segment.start, end: segment.end, text: segment.text, tokens: segment.tokens,
                        temperature: segment.temperature, avg_logprob: segment.averageLogProbability,
                        compression_ratio: segment.compressionRatio, no_speech_prob: segment.noSpeechProbability)
            }
        }
        if request.words {
            let timed = result.segments.compactMap(\.words)
            // An empty list would look like silence; a model that gave no times must say so.
            if timed.isEmpty, !result.segments.isEmpty {
                throw ServerError(status: .internalServerError,
                                  message: "Word timestamps were asked for, but the speech model returned none for '\(text.prefix(40))…'.",
                                  type: "server_error", code: "no_word_timestamps")
            }
            // OpenAI's words carry no leading space (Whisper's tokens do).
            words = timed.joined().map { Word(word: $0.word.trimmingCharacters(in: .whitespaces), start: $0.start, end: $0.end) }
        }
    }
}
