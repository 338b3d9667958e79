import Foundation
import Hearth
import HearthTestSupport
import Testing

/// The SDK's speech model: loading by path, a whole transcription, streamed segments with
/// progress, and cancellation.
@Suite(.serialized) struct SpeechModelTests {
    static let model = Result { try SpeechModel(path: try TestFiles.model("whisper-base"), threads: 2) }

    /// Two librivox clips and a pause, about 40 s: two windows.
    static func longAudio() throws -> [Float] {
        let first = try AudioSamples.load(contentsOf: SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0870.wav"))
        let second = try AudioSamples.load(contentsOf: SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0920.wav"))
        var samples = first.samples + [Float](repeating: 0, count: 16_000) + second.samples
        while samples.count < 40 * 16_000 { samples += [Float](repeating: 0, count: 16_000) + second.samples }
        return samples
    }

    @Test func loadsByPathThroughHearth() async throws {
        let path = try TestFiles.model("whisper-base")
        let whisper = try await Hearth().loadTranscriber(path, pullIfMissing: false)
        let result = try await whisper.transcribe(audioURL: SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0880.wav"))
        #expect(result.text == " He was not an ill-disposed young man.")
        #expect(result.language == "en")
        await #expect(throws: HearthError.self) { try await Hearth().loadTranscriber("/no/such/whisper", pullIfMissing: false) }
    }

    /// The stream gives the segments of `transcribe`, in order, a progress report per window
    /// ending at the duration, and the whole transcription last.
    @Test func streamedSegmentsEqualTheTranscription() async throws {
        let whisper = try Self.model.get()
        let samples = try Self.longAudio()
        let config = TranscriptionConfig(language: "en", wordTimestamps: true)
        let whole = try await whisper.transcribe(samples: samples, config: config)
        var segments: [TranscriptionSegment] = []
        var progress: [Double] = []
        var finished: Transcription?
        for try await event in whisper.segments(samples: samples, config: config) {
            switch event {
            case .segment(let s): segments.append(s)
            case .progress(let done, let duration):
                progress.append(done)
                #expect(abs(duration - Double(samples.count) / 16_000) < 1e-9)
            case .finished(let t): finished = t
            }
        }
        #expect(segments == whole.segments)
        #expect(segments.count >= 2)
        #expect(segments.allSatisfy { !($0.words ?? []).isEmpty })
        #expect(progress.count >= 2 && progress == progress.sorted())
        #expect(abs((progress.last ?? 0) - Double(samples.count) / 16_000) < 0.02)
        #expect(finished?.segments == whole.segments)
    }

    /// Cancelling the task ends the transcription with CancellationError, and the model serves
    /// the next request as before.
    @Test func cancellationStopsATranscription() async throws {
        let whisper = try Self.model.get()
        let samples = try Self.longAudio()
        let task = Task { try await whisper.transcribe(samples: samples, config: TranscriptionConfig(language: "en")) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // A stream whose consumer leaves early stops too; the next transcription runs normally.
        for try await event in whisper.segments(samples: samples) {
            if case .segment = event { break }
        }
        let clip = try await whisper.transcribe(audioURL: SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0930.wav"))
        #expect(clip.text == " He might even have been made amiable himself.")
    }
}
