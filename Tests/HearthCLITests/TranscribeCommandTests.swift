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
        let status = await child.wait()
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

        let json = try await hearth(["transcribe", "models/whisper-base", "talk.wav", "--format", "json", "-t", "2"], in: directory)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["language"] as? String == "en")
        #expect((object["segments"] as? [[String: Any]])?.count == 1)

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
}
