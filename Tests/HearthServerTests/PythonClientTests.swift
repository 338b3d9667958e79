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
}

@Suite("Real OpenAI and Ollama Python clients against hearth serve", .serialized,
       .enabled(if: PythonClients.enabled, "python3 with openai and ollama is missing: pip install openai ollama"))
struct PythonClientTests {
    @Test("openai and ollama: models, chat (streamed and not) equal to the engine's greedy answer, completions, embeddings, pull progress, errors")
    func clients() async throws {
        try #require(PythonClients.available, "python3 with openai and ollama is missing: pip install openai ollama (.ci/run does)")
        let repo = HubEmulator.Repo("test-org/tiny-GGUF", files: [.init("tiny-Q8_0.gguf", try tinyModelBytes())], tags: ["gguf"])
        let emulator = try HubEmulator(repos: [repo])
        try await emulator.start()
        defer { Task { await emulator.stop() } }
        let server = try await ServerFixture(hubEndpoint: emulator.endpoint)
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
        let file = server.directory.file("expected.json")
        try JSONSerialization.data(withJSONObject: expected).write(to: file)
        let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/python_clients.py").path
        var environment = ProcessInfo.processInfo.environment
        environment["NO_PROXY"] = "*"
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, server.base, file.path],
                              environment: environment, directory: server.directory)
        let status = await child.wait()
        #expect(status == 0, "\(child.outputText)\n\(child.errorText)")
        #expect(child.outputText.contains("\"passed\""))
    }
}
