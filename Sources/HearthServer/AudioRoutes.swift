import Dispatch
import Foundation
import HTTPTypes
import Hearth
import Hummingbird
import NIOCore

// OpenAI's speech to text: /v1/audio/transcriptions and /v1/audio/translations, multipart
// forms in, the formats of OpenAI's `response_format` out. Wire types mirror OpenAI's names.

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

extension HearthService {
    func addAudioRoutes(to router: Router<BasicRequestContext>) {
        let v1 = router.group("v1")
        v1.post("audio/transcriptions") { request, _ in try await self.audio(request, translate: false) }
        v1.post("audio/translations") { request, _ in try await self.audio(request, translate: true) }
    }

    private func audio(_ request: Request, translate: Bool) async throws -> Response {
        // Said before the upload is read: a server without a speech model cannot use it.
        guard speech.configured != nil else { throw SpeechModelManager.noSpeechModel }
        let upload = try await AudioUpload.read(request, into: configuration.uploadDirectory, fileLimit: configuration.maxAudioBytes)
        // The upload's file goes when this request ends, answered or not.
        defer { upload.removeFile() }
        guard let file = upload.file else {
            throw ServerError.badRequest("The form has no `file` field; send the audio as file (curl -F file=@speech.wav).", param: "file")
        }
        let filename = upload.filename ?? "file"
        let audioRequest = try AudioRequest(upload, translate: translate)
        _ = try speech.resolve(upload.field("model"))
        guard upload.fileBytes > 0 else {
            throw ServerError.badRequest("The file '\(filename)' is empty; send a recording with sound in it.", param: "file")
        }
        let model = try await speech.model()
        metrics.transcriptionStarted()
        var seconds: Double?
        defer { metrics.transcriptionEnded(seconds: seconds) }
        let samples = try await Self.decodeAudio(file, filename: filename)
        let result = try await model.transcribe(samples: samples, config: audioRequest.config)
        seconds = result.duration
        return try Self.audioResponse(result, request: audioRequest)
    }

    /// The file's samples at Whisper's rate. Decoding (and ffmpeg, for formats other than WAV)
    /// takes a while for long files: it runs on a Dispatch thread, not on the few threads
    /// every request's tasks share.
    private static func decodeAudio(_ file: URL, filename: String) async throws -> [Float] {
        try await withCheckedThrowingContinuation { done in
            DispatchQueue.global(qos: .userInitiated).async {
                done.resume(with: Result {
                    do {
                        return try AudioSamples.load(contentsOf: file).samples
                    } catch HearthError.invalidAudioFile(_, let reason) {
                        // The temporary file's path (ffmpeg names it) means nothing to the client; its own name does.
                        let reason = reason.replacingOccurrences(of: file.path, with: filename)
                        throw ServerError.badRequest(
                            "The file '\(filename)' is not audio Hearth can read: \(reason). Send WAV, MP3, FLAC, Ogg, M4A or WebM audio.",
                            param: "file", code: "invalid_audio")
                    }
                })
            }
        }
    }

    private static func audioResponse(_ result: Transcription, request: AudioRequest) throws -> Response {
        func plain(_ text: String, _ type: String) -> Response {
            var headers = HTTPFields()
            headers[.contentType] = type
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        switch request.format {
        case .json:
            struct Body: Encodable {
                var text: String
                var usage: AudioUsage
            }
            return try JSONBody.response(Body(text: result.text.trimmingCharacters(in: .whitespaces), usage: AudioUsage(duration: result.duration)))
        case .verbose_json:
            return try JSONBody.response(try VerboseTranscription(result, request: request))
        case .text:
            return plain(result.formatted(.text), "text/plain; charset=utf-8")
        case .srt:
            return plain(result.formatted(.srt), "application/x-subrip; charset=utf-8")
        case .vtt:
            return plain(result.formatted(.vtt), "text/vtt; charset=utf-8")
        }
    }
}
