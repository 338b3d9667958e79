import Foundation
import HearthTestSupport
import Testing

/// `hearth transcribe` as people type it: relative paths to the model folder and the audio,
/// every output format, -o, and clear errors for files that are not audio.
@Suite("hearth transcribe", .serialized)
struct TranscribeCommandTests {
    static let clip = "/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav"

    private static func workspace() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        let files = FileManager.default
        guard files.fileExists(atPath: clip) else {
            throw TestFiles.Missing(description: "\(clip) is missing: install Debian's pocketsphinx-testdata.")
        }
        try files.createDirectory(at: directory.file("models"), withIntermediateDirectories: true)
        try files.createSymbolicLink(atPath: directory.file("models/whisper-base").path, withDestinationPath: try TestFiles.model("whisper-base"))
        try files.copyItem(atPath: clip, toPath: directory.file("talk.wav").path)
        try Data("this is not audio".utf8).write(to: directory.file("notes.mp3"))
        try Data(try Data(contentsOf: URL(fileURLWithPath: clip)).prefix(30)).write(to: directory.file("cut.wav"))
        try files.createDirectory(at: directory.file("cache"), withIntermediateDirectories: true)
        return directory
    }

    private func hearth(_ arguments: [String], in directory: TemporaryDirectory) async throws -> (status: Int32, output: String, errors: String) {
        let environment = ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1", "HF_HOME": directory.file("cache").path]) { _, new in new }
        let child = try Child(try TestFiles.hearthBinary, arguments, environment: environment, directory: directory,
                              workingDirectory: directory.url)
        let status = try await child.wait()
        return (status, child.outputText, child.errorText)
    }

    @Test("text, srt, vtt and json; -o writes NAME.EXT; bad audio is a clear error")
    func formatsAndErrors() async throws {
        let directory = try Self.workspace()
        let text = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "-t", "2"], in: directory)
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output == "He was not an ill-disposed young man.\n")

        let srt = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--format", "srt", "--language", "en", "-t", "2"], in: directory)
        #expect(srt.output.hasPrefix("1\n00:00:00,000 --> 00:00:0"), "\(srt.output)")
        #expect(srt.output.contains("He was not an ill-disposed young man."))

        let written = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--format", "vtt", "-o", "out", "-t", "2"], in: directory)
        #expect(written.status == 0, "\(written.errors)")
        let vtt = try String(contentsOf: directory.file("out/talk.vtt"), encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT\n\n00:00:00.000 --> "), "\(vtt)")

        let json = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--format", "json", "--word-timestamps",
                                     "-t", "2"], in: directory)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["language"] as? String == "en")
        let segments = try #require(object["segments"] as? [[String: Any]])
        #expect(segments.count == 1)
        let words = try #require(segments.first?["words"] as? [[String: Any]])
        #expect(words.compactMap { $0["word"] as? String }.joined() == " He was not an ill-disposed young man.")

        let greedy = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--beam-size", "1", "--no-fallback",
                                       "-t", "2"], in: directory)
        #expect(greedy.output == "He was not an ill-disposed young man.\n", "\(greedy.errors)")
        let badBeam = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--beam-size", "0"], in: directory)
        #expect(badBeam.status != 0 && badBeam.errors.contains("beam size"), "\(badBeam.errors)")

        let notAudio = try await hearth(["transcribe", "models/whisper-base", "notes.mp3"], in: directory)
        #expect(notAudio.status != 0 && notAudio.errors.contains("notes.mp3") && notAudio.errors.contains("ffmpeg"), "\(notAudio.errors)")
        let truncated = try await hearth(["transcribe", "models/whisper-base", "cut.wav"], in: directory)
        #expect(truncated.status != 0 && truncated.errors.contains("truncated"), "\(truncated.errors)")
        let missing = try await hearth(["transcribe", "models/whisper-base", "absent.wav"], in: directory)
        #expect(missing.status != 0 && missing.errors.contains("absent.wav"), "\(missing.errors)")
        let language = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--language", "xx"], in: directory)
        #expect(language.status != 0 && language.errors.contains("\"xx\""), "\(language.errors)")
        let format = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--format", "doc"], in: directory)
        #expect(format.status != 0 && format.errors.contains("--format"), "\(format.errors)")
    }

    /// The same model as a Hugging Face folder and as a whisper.cpp file (written from
    /// models/whisper-base by scripts/make-whisper-layouts.py) gives the same text.
    @Test("a Hugging Face folder and a whisper.cpp file transcribe alike")
    func otherLayouts() async throws {
        let directory = try Self.workspace()
        for model in [try WhisperLayouts.huggingFace.path, try WhisperLayouts.ggml.path] {
            let text = try await hearth(["transcribe", model, "talk.wav", "-t", "2"], in: directory)
            #expect(text.status == 0, "\(text.errors)")
            #expect(text.output == "He was not an ill-disposed young man.\n", "\(model)")
        }
        let refused = try await hearth(["transcribe", "models", "talk.wav"], in: directory)
        #expect(refused.status != 0 && refused.errors.contains("whisper.cpp file"), "\(refused.errors)")
    }

    @Test("--weights q8_0 transcribes with Q8_0 matrices; an unknown kind is refused with the choices")
    func q8_0Weights() async throws {
        let directory = try Self.workspace()
        let text = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--weights", "q8_0", "-t", "2"], in: directory)
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output == "He was not an ill-disposed young man.\n")
        let refused = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--weights", "q4_0"], in: directory)
        #expect(refused.status != 0 && refused.errors.contains("--weights must be one of float, q8_0"), "\(refused.errors)")
    }

    /// Ten minutes of espeak-ng reading the GPL, decoded with the defaults (beam search,
    /// fallback) and word timestamps: a progress line after every window up to the whole
    /// duration, segments in order across the windows, the words it says, and a peak resident
    /// size that does not grow with the audio (measured by /usr/bin/time).
    @Test("a 10-minute file shows its progress and stays within bounded memory")
    func tenMinutes() async throws {
        let directory = try Self.workspace()
        let license = try String(contentsOfFile: "/usr/share/common-licenses/GPL-3", encoding: .utf8)
        let reading = license.split(whereSeparator: \.isWhitespace).prefix(2_000).joined(separator: " ")
        try Tools.speech(reading, options: ["-s", "160"], to: directory.file("long.wav"), seconds: 600)
        let environment = ProcessInfo.processInfo.environment.merging(["HF_HUB_OFFLINE": "1"]) { _, new in new }
        let child = try Child(try Tools.path("time"),
                              ["-f", "peak %M KB", try TestFiles.hearthBinary.path, "transcribe", "models/whisper-base", "long.wav",
                               "--language", "en", "--format", "json", "--word-timestamps", "-t", "2"],
                              environment: environment, directory: directory, workingDirectory: directory.url)
        let status = try await child.wait()
        #expect(status == 0, "\(child.errorText.suffix(500))")
        let progress = child.errorText.split(separator: "\n").filter { $0.hasPrefix("long.wav: ") }
        #expect(progress.count >= 20, "\(child.errorText.prefix(500))")
        #expect(progress.last?.contains("100% (600 of 600 s)") == true, "\(progress.last ?? "")")
        let peak = try #require(child.errorText.split(separator: "\n").last { $0.hasPrefix("peak ") })
        let kilobytes = try #require(Int(peak.split(separator: " ")[1]))
        #expect(kilobytes < 700_000, "peak resident size \(kilobytes) KB")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(child.outputText.utf8)) as? [String: Any])
        let segments = try #require(object["segments"] as? [[String: Any]])
        let times = segments.compactMap { s in (s["start"] as? Double).flatMap { start in (s["end"] as? Double).map { (start, $0) } } }
        #expect(times.count == segments.count && times.last!.1 > 590)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0.0 <= $1.0 && $0.1 <= $1.0 + 0.02 })
        let text = (object["text"] as? String ?? "").lowercased()
        #expect(text.components(separatedBy: "software").count > 10, "\(text.prefix(300))")
        #expect(text.contains("general public license"), "\(text.prefix(300))")
        let words = segments.flatMap { $0["words"] as? [[String: Any]] ?? [] }
        #expect(words.count > 1_000)
        let starts = words.compactMap { $0["start"] as? Double }
        #expect(starts.count == words.count && zip(starts, starts.dropFirst()).allSatisfy { $0 <= $1 })
    }
}

