import Dispatch
import Foundation
import HearthSpeech
import Synchronization

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

    /// Loads the Whisper model at `path`: a faster-whisper (CTranslate2) folder, a Hugging Face
    /// folder (`model.safetensors` and `config.json`), or a whisper.cpp file (`ggml-base.bin`).
    /// `weights: .q8_0` holds its matrices as Q8_0: less memory and faster, close to the float
    /// results but not equal to them.
    public init(path: String, name: String? = nil, threads: Int? = nil, weights: WhisperWeights = .float) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw HearthError.fileNotFound(path: path) }
        transcriber = try Transcriber(contentsOf: URL(fileURLWithPath: path),
                                      threads: threads ?? ProcessInfo.processInfo.activeProcessorCount, weights: weights)
        self.name = name ?? path
    }

    /// The transcription of an audio file (WAV, or any format ffmpeg reads). Cancelling the
    /// task stops it between decoding steps with `CancellationError`.
    public func transcribe(audioURL: URL, config: TranscriptionConfig = TranscriptionConfig(),
                           progress: @escaping @Sendable (Double, [TranscriptionSegment]) -> Void = { _, _ in }) async throws -> Transcription {
        let audio = try AudioSamples.load(contentsOf: audioURL)
        return try await transcribe(samples: audio.samples, config: config, progress: progress)
    }

    /// The transcription of 16 kHz mono samples; `progress` hears the seconds done and the new
    /// segments after each 30-second window. Cancelling the task stops it.
    public func transcribe(samples: [Float], config: TranscriptionConfig = TranscriptionConfig(),
                           progress: @escaping @Sendable (Double, [TranscriptionSegment]) -> Void = { _, _ in }) async throws -> Transcription {
        let transcriber = self.transcriber
        let stop = Stop()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { done in
                queue.async {
                    done.resume(with: Result {
                        try transcriber.transcribe(samples: samples, config: config, progress: progress, isCancelled: stop.isSet)
                    })
                }
            }
        } onCancel: {
            stop.set()
        }
    }

    /// The segments of an audio file as they are transcribed, with the progress after each
    /// 30-second window:
    ///
    /// ```swift
    /// for try await event in whisper.segments(audioURL: url) {
    ///     if case .segment(let s) = event { print(s.start, s.text) }
    /// }
    /// ```
    ///
    /// Leaving the loop stops the transcription.
    public func segments(audioURL: URL, config: TranscriptionConfig = TranscriptionConfig()) -> AsyncThrowingStream<TranscriptionEvent, Error> {
        events({ try AudioSamples.load(contentsOf: audioURL).samples }, config: config)
    }

    /// The segments of 16 kHz mono samples as they are transcribed (see `segments(audioURL:)`).
    public func segments(samples: [Float], config: TranscriptionConfig = TranscriptionConfig()) -> AsyncThrowingStream<TranscriptionEvent, Error> {
        events({ samples }, config: config)
    }

    private func events(_ samples: @escaping @Sendable () throws -> [Float],
                        config: TranscriptionConfig) -> AsyncThrowingStream<TranscriptionEvent, Error> {
        let transcriber = self.transcriber
        let stop = Stop()
        return AsyncThrowingStream { continuation in
            continuation.onTermination = { _ in stop.set() }
            queue.async {
                do {
                    let samples = try samples()
                    let duration = Double(samples.count) / Double(AudioSamples.whisperRate)
                    let result = try transcriber.transcribe(samples: samples, config: config, progress: { done, segments in
                        for segment in segments { continuation.yield(.segment(segment)) }
                        continuation.yield(.progress(secondsDone: min(done, duration), duration: duration))
                    }, isCancelled: stop.isSet)
                    continuation.yield(.finished(result))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }
    }
}

/// What a streamed transcription reports.
public enum TranscriptionEvent: Sendable {
    /// A segment, as soon as its window is decoded.
    case segment(TranscriptionSegment)
    /// Seconds of audio done, of all there is.
    case progress(secondsDone: Double, duration: Double)
    /// The whole transcription, last.
    case finished(Transcription)
}

/// A flag set once, from any thread.
private final class Stop: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    func isSet() -> Bool { flag.load(ordering: .relaxed) }
}

extension Hearth {
    /// Loads the Whisper model called `name`: a faster-whisper folder (`model.bin`,
    /// `tokenizer.json`, `config.json`), a Hugging Face folder (`model.safetensors`,
    /// `config.json`, `tokenizer.json`, `generation_config.json`), a whisper.cpp file
    /// (`ggml-base.bin`), or a Hub repository in one of the folder forms
    /// (`Systran/faster-whisper-base`, `openai/whisper-base`) or one model of a repository of
    /// whisper.cpp files (`ggerganov/whisper.cpp:base` for `ggml-base.bin`), pulled first unless
    /// `pullIfMissing` is false. `weights: .q8_0` holds the matrices as Q8_0 (see `WhisperWeights`).
    public func loadTranscriber(_ name: String, pullIfMissing: Bool = true, weights: WhisperWeights = .float) async throws -> SpeechModel {
        try SpeechModel(path: try await modelFolder(name, pullIfMissing: pullIfMissing), name: name, threads: configuration.threads,
                        weights: weights)
    }
}
