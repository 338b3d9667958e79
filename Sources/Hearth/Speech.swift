import Dispatch
import Foundation
import HearthSpeech

/// Speech to text with a Whisper model running on this machine.
///
/// ```swift
/// let whisper = try await Hearth().loadTranscriber("models/whisper-base")
/// let result = try await whisper.transcribe(audioURL: URL(fileURLWithPath: "talk.wav"))
/// for segment in result.segments { print(segment.start, segment.end, segment.text) }
/// ```
public final class SpeechModel: Sendable {
    /// The name it was loaded by.
    public let name: String
    /// The pipeline underneath.
    public let transcriber: Transcriber
    private let queue = DispatchQueue(label: "hearth.speech")

    /// Loads the faster-whisper (CTranslate2) model folder at `path`.
    public init(path: String, name: String? = nil, threads: Int? = nil) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HearthError.fileNotFound(path: path)
        }
        transcriber = try Transcriber(contentsOf: URL(fileURLWithPath: path),
                                      threads: threads ?? ProcessInfo.processInfo.activeProcessorCount)
        self.name = name ?? path
    }

    /// The transcription of an audio file (WAV, or any format ffmpeg reads).
    public func transcribe(audioURL: URL, config: TranscriptionConfig = TranscriptionConfig(),
                           progress: @escaping @Sendable (Double, [TranscriptionSegment]) -> Void = { _, _ in }) async throws -> Transcription {
        let audio = try AudioSamples.load(contentsOf: audioURL)
        return try await transcribe(samples: audio.samples, config: config, progress: progress)
    }

    /// The transcription of 16 kHz mono samples; `progress` hears the seconds done and the new
    /// segments after each 30-second window.
    public func transcribe(samples: [Float], config: TranscriptionConfig = TranscriptionConfig(),
                           progress: @escaping @Sendable (Double, [TranscriptionSegment]) -> Void = { _, _ in }) async throws -> Transcription {
        let transcriber = self.transcriber
        return try await withCheckedThrowingContinuation { done in
            queue.async { done.resume(with: Result { try transcriber.transcribe(samples: samples, config: config, progress: progress) }) }
        }
    }
}

extension Hearth {
    /// Loads the Whisper model called `name`: a faster-whisper folder (`model.bin`,
    /// `tokenizer.json`, `config.json`) or a Hub repository in that form
    /// (`Systran/faster-whisper-base`), pulled first unless `pullIfMissing` is false.
    public func loadTranscriber(_ name: String, pullIfMissing: Bool = true) async throws -> SpeechModel {
        try SpeechModel(path: try await modelFolder(name, pullIfMissing: pullIfMissing), name: name, threads: configuration.threads)
    }
}
