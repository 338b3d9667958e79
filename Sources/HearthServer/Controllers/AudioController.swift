import Dispatch
import Foundation
import HTTPTypes
import Hearth
import Hummingbird
import NIOCore

/// OpenAI's speech to text: /v1/audio/transcriptions and /v1/audio/translations, multipart
/// forms in, the formats of OpenAI's `response_format` out.
struct AudioController: Sendable {
    let service: HearthService

    func addRoutes(to v1: some RouterMethods<BasicRequestContext>) {
        v1.post("audio/transcriptions") { request, _ in try await audio(request, translate: false) }
        v1.post("audio/translations") { request, _ in try await audio(request, translate: true) }
    }

    private func audio(_ request: Request, translate: Bool) async throws -> Response {
        // Said before the upload is read: a server without a speech model cannot use it.
        let speech = service.speech
        guard speech.configured != nil else { throw SpeechModelManager.noSpeechModel }
        let upload = try await AudioUpload.read(request, into: service.configuration.uploadDirectory,
                                                fileLimit: service.configuration.maxAudioBytes)
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
        let metrics = service.metrics
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
