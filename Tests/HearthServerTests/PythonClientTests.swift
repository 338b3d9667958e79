import Foundation
import Hearth
import HearthTestSupport
import HubEmulator
import Testing

/// The `openai` and `ollama` Python packages, the clients most users already have. Skipped
/// where they are missing, except in CI (CI set), where `.ci/run` installs them and a missing
/// package is a failure.
enum PythonClients {
    static let available = Python.canImport("openai, ollama")

    static var enabled: Bool { available || ProcessInfo.processInfo.environment["CI"] != nil }

    /// Runs python_clients.py against `server` with `expected` (whose keys choose the checks)
    /// and fails the test with the script's output unless every check passed.
    static func run(_ server: ServeProcess, expected: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try #require(available, "python3 with openai and ollama is missing: pip install openai ollama (.ci/run does)", sourceLocation: sourceLocation)
        let file = server.directory.file("expected.json")
        try JSONSerialization.data(withJSONObject: expected).write(to: file)
        let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/python_clients.py").path
        var environment = ProcessInfo.processInfo.environment
        environment["NO_PROXY"] = "*"
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, server.base, file.path],
                              environment: environment, directory: server.directory)
        let status = try await child.wait()
        #expect(status == 0, "\(child.outputText)\n\(child.errorText)", sourceLocation: sourceLocation)
        #expect(child.outputText.contains("\"passed\""), sourceLocation: sourceLocation)
    }
}

@Suite("Real OpenAI and Ollama Python clients against hearth serve", .serialized,
       .enabled(if: PythonClients.enabled, "python3 with openai and ollama is missing: pip install openai ollama"))
struct PythonClientTests {
    @Test("openai and ollama: models, chat (streamed and not) equal to the engine's greedy answer, completions, embeddings, pull progress, errors")
    func clients() async throws {
        let repo = HubEmulator.Repo("test-org/tiny-GGUF", files: [.init("tiny-Q8_0.gguf", try tinyModelBytes())], tags: ["gguf"])
        let emulator = try HubEmulator(repos: [repo])
        try await emulator.start()
        defer { Task { await emulator.stop() } }
        let server = try await ServeProcess(hubEndpoint: emulator.endpoint)
        defer { Task { await server.stop() } }

        let question = "What is the capital of France?"
        let completionPrompt = "The three primary colors are"
        let model = try referenceModel.get()
        let expected: [String: Any] = [
            "question": question,
            "chat": try await greedyAnswer(question, maxTokens: 24),
            "completion_prompt": completionPrompt,
            "completion": try await model.complete(completionPrompt, options: GenerationOptions(sampling: .greedy, maxTokens: 12)).collect().text,
            "pull": "test-org/tiny-GGUF",
            "json_mode": true,
        ]
        try await PythonClients.run(server, expected: expected)
    }

    @Test("openai audio: transcriptions as json, srt and verbose_json segments equal to the SDK's, translations of espeak-ng German, 400 and 413")
    func audio() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let transcription = try await sdkTranscription(clip)
        // The same espeak-ng command line as `espeak-ng -v de -w raw.wav "…"; sox -D raw.wav -r 16000 -c 1 -b 16 out.wav`.
        let german = server.directory.file("german.wav")
        try Tools.speech("Guten Morgen. Heute scheint die Sonne, und wir gehen zusammen in den Park.", options: ["-v", "de"], to: german)
        let translation = try await sdkTranscription(german, TranscriptionConfig(translate: true))
        try await PythonClients.run(server, expected: ["audio": [
            "clip": clip.path,
            "text": transcription.text.trimmingCharacters(in: .whitespaces),
            "srt": transcription.formatted(.srt),
            "duration": transcription.duration,
            "segments": transcription.segments.map { ["text": $0.text, "tokens": $0.tokens, "start": $0.start, "end": $0.end] as [String: Any] },
            "german": german.path,
            "translation": translation.text.trimmingCharacters(in: .whitespaces),
        ] as [String: Any]])
    }

    /// Needs the SDK's word timestamps (TranscriptionSegment.words), like
    /// AudioRoutesTests.wordTimestamps.
    @Test("openai audio: verbose_json with timestamp_granularities word and segment gives the SDK's words")
    func audioWords() async throws {
        let server = try await ServeProcess(speechModel: true)
        defer { Task { await server.stop() } }
        let clip = try SpeechClips.url(SpeechClips.dashwood)
        let transcription = try await sdkTranscription(clip, TranscriptionConfig(wordTimestamps: true))
        let words = transcription.segments.flatMap { $0.words ?? [] }.map {
            ["word": $0.word.trimmingCharacters(in: .whitespaces), "start": $0.start, "end": $0.end] as [String: Any]
        }
        try await PythonClients.run(server, expected: ["audio_words": [
            "clip": clip.path, "text": transcription.text.trimmingCharacters(in: .whitespaces), "words": words,
        ] as [String: Any]])
    }
}
