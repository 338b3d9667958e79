import Foundation
import Hearth
import HearthTestSupport
import Testing

/// The server's thoughts-and-answer fields, over loopback: OpenAI's `reasoning_content` and
/// Ollama's `thinking`, for SmolLM2 under a template that opens `<think>` ("smollm2-thinking")
/// and the tiny random Qwen3 under DeepSeek R1's ("qwen3-r1"), each held to the SDK's answer
/// to the same request.
@Suite("Reasoning models over HTTP", .serialized)
struct ReasoningServerTests {
    static func fixture() async throws -> ServeProcess {
        try await ServeProcess(parallel: 2) { directory in
            ["smollm2-thinking": try ReasoningModels.smolLM2(in: directory.url),
             "qwen3-r1": try ReasoningModels.tinyQwen3(template: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", in: directory.url)]
        }
    }

    /// The conversation the clients send: one answer shown with its thoughts, then a question.
    static let messages: [ChatMessage] = [
        ChatMessage(role: .user, content: "Name a fruit."),
        ChatMessage(role: .assistant, content: "An apple.", reasoning: "The user wants a fruit. Apples are common."),
        ChatMessage(role: .user, content: "Name a vegetable."),
    ]

    /// The SDK's greedy answer to `messages` on the model at `url`.
    static func sdkAnswer(_ url: URL, _ messages: [ChatMessage], maxTokens: Int, thinking: Bool? = nil) async throws -> Response {
        let model = try LocalModel(path: url.path, threads: 2, contextLength: 2048)
        return try await model.stream(messages, options: GenerationOptions(sampling: .greedy, maxTokens: maxTokens, thinking: thinking))
            .collect()
    }

    static func wire(_ messages: [ChatMessage], reasoningKey: String) -> [[String: Any]] {
        messages.map { message in
            var fields: [String: Any] = ["role": message.role.rawValue, "content": message.content]
            if let reasoning = message.reasoning { fields[reasoningKey] = reasoning }
            return fields
        }
    }

    @Test("OpenAI and Ollama wire fields: thoughts apart from the answer, streamed and not; a plain model's bodies keep their keys")
    func wireFields() async throws {
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let thinking = server.models["smollm2-thinking"]!
        let expected = try await Self.sdkAnswer(thinking, Self.messages, maxTokens: 80)
        try #require(!expected.reasoning.isEmpty && !expected.text.isEmpty)

        let chat = try await server.post("/v1/chat/completions", [
            "model": "smollm2-thinking", "temperature": 0, "max_tokens": 80,
            "messages": Self.wire(Self.messages, reasoningKey: "reasoning_content"),
        ]).json()
        let choice = try #require((chat["choices"] as? [[String: Any]])?.first)
        let message = try #require(choice["message"] as? [String: Any])
        #expect(message["content"] as? String == expected.text)
        #expect(message["reasoning_content"] as? String == expected.reasoning)
        let details = (chat["usage"] as? [String: Any])?["completion_tokens_details"] as? [String: Any]
        #expect(details?["reasoning_tokens"] as? Int == expected.statistics?.reasoningTokens)

        var reasoning = "", content = "", contentStarted = false, reasoningAfterContent = false
        try await server.stream("/v1/chat/completions", [
            "model": "smollm2-thinking", "temperature": 0, "max_tokens": 80, "stream": true,
            "messages": Self.wire(Self.messages, reasoningKey: "reasoning_content"),
        ]) { line in
            guard line.hasPrefix("{") else { return true }
            let event = try jsonObject(line)
            guard let delta = ((event["choices"] as? [[String: Any]])?.first)?["delta"] as? [String: Any] else { return true }
            if let piece = delta["reasoning_content"] as? String {
                reasoning += piece
                reasoningAfterContent = reasoningAfterContent || contentStarted
            }
            if let piece = delta["content"] as? String, !piece.isEmpty {
                content += piece
                contentStarted = true
            }
            return true
        }
        #expect(reasoning == expected.reasoning)
        #expect(content == expected.text)
        #expect(!reasoningAfterContent)

        let ollama = try await server.post("/api/chat", [
            "model": "smollm2-thinking", "stream": false, "think": true, "options": ["temperature": 0, "num_predict": 80],
            "messages": Self.wire(Self.messages, reasoningKey: "thinking"),
        ]).json()
        let ollamaMessage = try #require(ollama["message"] as? [String: Any])
        #expect(ollamaMessage["content"] as? String == expected.text)
        #expect(ollamaMessage["thinking"] as? String == expected.reasoning)

        // A model that does not think: no new keys anywhere.
        let plain = try await server.post("/v1/chat/completions", [
            "model": "smollm2", "temperature": 0, "max_tokens": 8, "messages": [["role": "user", "content": "Hi"]],
        ]).json()
        let plainChoice = try #require((plain["choices"] as? [[String: Any]])?.first)
        #expect(Set((plainChoice["message"] as? [String: Any])?.keys.map { $0 } ?? []) == ["role", "content"])
        #expect((plain["usage"] as? [String: Any])?["completion_tokens_details"] == nil)
        let plainOllama = try await server.post("/api/chat", [
            "model": "smollm2", "stream": false, "options": ["temperature": 0, "num_predict": 8],
            "messages": [["role": "user", "content": "Hi"]],
        ]).json()
        #expect(Set((plainOllama["message"] as? [String: Any])?.keys.map { $0 } ?? []) == ["role", "content"])
    }

    @Test("RemoteModel reads reasoning_content, sends a history's thoughts back and turns thinking off through the server")
    func remoteModel() async throws {
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let thinking = server.models["smollm2-thinking"]!
        let remote = RemoteModel(name: "smollm2-thinking", baseURL: try #require(URL(string: server.base + "/v1")))
        let on = GenerationOptions(sampling: .greedy, maxTokens: 80)
        let expected = try await Self.sdkAnswer(thinking, Self.messages, maxTokens: 80)
        let response = try await remote.stream(Self.messages, options: on).collect()
        #expect(response.reasoning == expected.reasoning)
        #expect(response.text == expected.text)
        let offExpected = try await Self.sdkAnswer(thinking, Self.messages, maxTokens: 12, thinking: false)
        let off = try await remote.stream(Self.messages, options: GenerationOptions(sampling: .greedy, maxTokens: 12, thinking: false))
            .collect()
        #expect(off.reasoning.isEmpty)
        #expect(off.text == offExpected.text)
    }

    @Test("openai and ollama Python clients: reasoning_content, thinking, think and enable_thinking off, thoughts cut by the budget")
    func pythonClients() async throws {
        try #require(PythonClients.available, "python3 with openai and ollama is missing: pip install openai ollama (.ci/run does)")
        let server = try await Self.fixture()
        defer { Task { await server.stop() } }
        let thinking = server.models["smollm2-thinking"]!
        let tiny = server.models["qwen3-r1"]!
        let question = [ChatMessage(role: .user, content: "What color is the sky?")]
        func pair(_ response: Response) -> [String: Any] {
            ["reasoning": response.reasoning, "answer": response.text, "finish": response.finishReason.rawValue]
        }
        let expected: [String: Any] = [
            "messages": Self.wire(Self.messages, reasoningKey: "reasoning_content"),
            "ollama_messages": Self.wire(Self.messages, reasoningKey: "thinking"),
            "question": question[0].content,
            "chat": pair(try await Self.sdkAnswer(thinking, Self.messages, maxTokens: 80)),
            "chat_off": pair(try await Self.sdkAnswer(thinking, Self.messages, maxTokens: 12, thinking: false)),
            "generate": pair(try await Self.sdkAnswer(thinking, question, maxTokens: 40)),
            "tiny": pair(try await Self.sdkAnswer(tiny, question, maxTokens: 16)),
        ]
        let file = server.directory.file("expected-reasoning.json")
        try JSONSerialization.data(withJSONObject: expected).write(to: file)
        let script = TestFiles.packageRoot.appendingPathComponent("Tests/HearthServerTests/python_reasoning_clients.py").path
        var environment = ProcessInfo.processInfo.environment
        environment["NO_PROXY"] = "*"
        let child = try Child(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, server.base, file.path],
                              environment: environment, directory: server.directory)
        let status = try await child.wait()
        #expect(status == 0, "\(child.outputText)\n\(child.errorText)")
        #expect(child.outputText.contains("\"passed\""))
    }
}
