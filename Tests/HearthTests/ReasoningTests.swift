import Foundation
import Hearth
import HearthTestSupport
import Testing

/// Where the reasoning test models are written (again on each run).
let reasoningDirectory = Result {
    let url = TestFiles.packageRoot.appendingPathComponent(".build/test-artifacts/reasoning-models")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// SmolLM2 under a template whose generation prompt opens `<think>` (`ReasoningModels`).
let thinkingSmolLM2 = Result {
    try LocalModel(path: ReasoningModels.smolLM2(in: reasoningDirectory.get()).path, threads: 2, contextLength: 1024)
}

/// The tiny random Qwen3 model under the chat template `template` of models/templates.
func tinyQwen3(template: String) throws -> LocalModel {
    let url = try ReasoningModels.tinyQwen3(template: template, in: reasoningDirectory.get())
    return try LocalModel(path: url.path, threads: 2, contextLength: 512)
}

/// Thoughts and answer found in a whole raw output with plain string operations: the thoughts
/// run to the first `</think>` (all of it when there is none), the answer after it.
func thoughtsAndAnswer(ofOutputInsideThoughts raw: String) -> (reasoning: String, answer: String) {
    guard let close = raw.range(of: "</think>") else { return (raw.trimmingCharacters(in: .whitespacesAndNewlines), "") }
    let answer = raw[close.upperBound...].drop { $0.isWhitespace }
    return (raw[..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines), String(answer))
}

@Suite("Reasoning models: thoughts apart from the answer", .serialized)
struct ReasoningTests {
    /// A conversation that shows SmolLM2 one answer with its thoughts.
    static let conversation: [ChatMessage] = [
        ChatMessage(role: .user, content: "Name a fruit."),
        ChatMessage(role: .assistant, content: "An apple.", reasoning: "The user wants a fruit. Apples are common."),
        ChatMessage(role: .user, content: "Name a vegetable."),
    ]

    /// The model's own output for `messages` under its template, straight from the engine:
    /// nothing separated, nothing held back.
    static func rawOutput(_ model: LocalModel, _ messages: [ChatMessage], options: GenerationOptions) throws
        -> (text: String, finishReason: FinishReason?, prompt: String) {
        let prompt = try #require(model.chatFormat).render(messages, enableThinking: options.thinking)
        let tokens = model.engine.tokenizer.encode(prompt, addSpecial: true, parseSpecial: true)
        let sequence = try model.engine.makeSequence(contextLength: model.contextLength)
        var text = ""
        var reason: FinishReason?
        try model.engine.generate(prompt: tokens, options: options, sequence: sequence) { chunk in
            text += chunk.text
            reason = chunk.finishReason ?? reason
            return true
        }
        return (text, reason, prompt)
    }

    /// The chunks of a stream, and the answer they gather into.
    static func chunks(_ stream: AsyncThrowingStream<GenerationChunk, any Error>) async throws -> ([GenerationChunk], Response) {
        var chunks: [GenerationChunk] = []
        var response = Response()
        for try await chunk in stream {
            chunks.append(chunk)
            response.append(chunk)
        }
        return (chunks, response)
    }

    @Test("streamed thoughts come first, apart from the answer, and equal the raw output's parts")
    func thoughtsThenAnswer() async throws {
        let model = try thinkingSmolLM2.get()
        #expect(model.chatFormat?.thinks == true)
        let options = GenerationOptions(sampling: .greedy, maxTokens: 80)
        let raw = try Self.rawOutput(model, Self.conversation, options: options)
        #expect(ChatFormat.opensThoughts(raw.prompt))
        let (reasoning, answer) = thoughtsAndAnswer(ofOutputInsideThoughts: raw.text)
        try #require(raw.text.contains("</think>"), "SmolLM2 no longer closes its thoughts here: \(raw.text.debugDescription)")

        let (chunks, response) = try await Self.chunks(model.stream(Self.conversation, options: options))
        #expect(response.reasoning == reasoning)
        #expect(response.text == answer)
        #expect(!response.reasoning.isEmpty && !response.text.isEmpty)
        #expect(!response.text.contains("<think>") && !response.text.contains("</think>"))
        #expect(response.finishReason == raw.finishReason)
        // Every chunk of thoughts comes before the first chunk of the answer.
        let firstAnswer = try #require(chunks.firstIndex { !$0.text.isEmpty })
        #expect(chunks[firstAnswer...].allSatisfy { $0.reasoning.isEmpty })
        #expect(chunks.filter { !$0.reasoning.isEmpty }.count > 1)
        let stats = try #require(response.statistics)
        #expect(stats.reasoningTokens > 0 && stats.reasoningTokens < stats.completionTokens)
    }

    @Test("thinking off: the template closes the thoughts and the output is the answer, as it is")
    func thinkingOff() async throws {
        let model = try thinkingSmolLM2.get()
        let options = GenerationOptions(sampling: .greedy, maxTokens: 40, thinking: false)
        let raw = try Self.rawOutput(model, Self.conversation, options: options)
        #expect(raw.prompt.hasSuffix("<think>\n</think>\n\n"))
        let response = try await model.stream(Self.conversation, options: options).collect()
        #expect(response.text == raw.text)
        #expect(response.reasoning.isEmpty)
        #expect(response.statistics?.reasoningTokens == 0)
    }

    @Test("thoughts cut off by the token budget are all reasoning, with finish reason length")
    func thoughtsThatNeverClose() async throws {
        let model = try thinkingSmolLM2.get()
        let options = GenerationOptions(sampling: .greedy, maxTokens: 4)
        let raw = try Self.rawOutput(model, Self.conversation, options: options)
        try #require(!raw.text.contains("</think>"))
        let response = try await model.stream(Self.conversation, options: options).collect()
        #expect(response.finishReason == .length)
        #expect(response.text.isEmpty)
        #expect(response.reasoning == raw.text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(response.statistics?.reasoningTokens == 4)
    }

    @Test("a JSON answer is held to one object from its first token: all answer, even after an opened <think>")
    func jsonAnswer() async throws {
        let model = try thinkingSmolLM2.get()
        let options = GenerationOptions(sampling: .greedy, maxTokens: 40, format: .json)
        let messages = [ChatMessage(role: .user, content: "Give a JSON object with the name of a vegetable.")]
        let raw = try Self.rawOutput(model, messages, options: options)
        let response = try await model.stream(messages, options: options).collect()
        #expect(response.text == raw.text)
        #expect(response.text.drop { $0.isWhitespace }.hasPrefix("{"))
        #expect(response.reasoning.isEmpty)
    }

    @Test("a chat session keeps the answer as the message, with its thoughts for templates that show them")
    func chatSessionHistory() async throws {
        let model = try thinkingSmolLM2.get()
        let chat = model.chat(options: GenerationOptions(sampling: .greedy, maxTokens: 80))
        let first = try await chat.respond(to: "Name a fruit.")
        let stored = try #require(chat.messages.last)
        #expect(stored.role == .assistant)
        #expect(stored.content == first.text)
        #expect(stored.reasoning == (first.reasoning.isEmpty ? nil : first.reasoning))
        let second = try await chat.respond(to: "Name a vegetable.")
        #expect(chat.messages.count == 4)
        #expect(!second.text.contains("</think>"))
        // The template shows the first answer's thoughts in the next prompt.
        let prompt = try #require(model.chatFormat).render(chat.messages)
        if !first.reasoning.isEmpty { #expect(prompt.contains("<think>\n\(first.reasoning)\n</think>\n\n\(first.text)<|im_end|>")) }
    }

    @Test("a model without <think> in its template or vocabulary streams its output unchanged")
    func plainModelUnchanged() async throws {
        let model = try LocalModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2, contextLength: 1024)
        #expect(model.chatFormat?.thinks == false)
        let messages = [ChatMessage(role: .user, content: "Write <think> and </think> twice.")]
        let options = GenerationOptions(sampling: .greedy, maxTokens: 40)
        let raw = try Self.rawOutput(model, messages, options: options)
        let (chunks, response) = try await Self.chunks(model.stream(messages, options: options))
        #expect(response.text == raw.text)
        #expect(chunks.allSatisfy { $0.reasoning.isEmpty })
        #expect(response.statistics?.reasoningTokens == 0)
    }

    @Test("a tiny Qwen3 under DeepSeek R1's template: the prompt opens <think>, the budget ends the thoughts")
    func tinyQwen3InsideThoughts() async throws {
        let model = try tinyQwen3(template: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")
        #expect(model.chatFormat?.thinks == true)
        let messages = [ChatMessage(role: .user, content: "Why is the sky blue?")]
        let options = GenerationOptions(sampling: .greedy, maxTokens: 24)
        let raw = try Self.rawOutput(model, messages, options: options)
        #expect(ChatFormat.opensThoughts(raw.prompt))
        let expected = thoughtsAndAnswer(ofOutputInsideThoughts: raw.text)
        let response = try await model.stream(messages, options: options).collect()
        #expect(response.reasoning == expected.reasoning)
        #expect(response.text == expected.answer)
        #expect(response.finishReason == raw.finishReason)
    }

    @Test("a tiny Qwen3 under Qwen3's template: output without <think> is all answer, byte for byte")
    func tinyQwen3WithoutTags() async throws {
        let model = try tinyQwen3(template: "Qwen-Qwen3-0.6B")
        #expect(model.chatFormat?.thinks == true)
        let messages = [ChatMessage(role: .user, content: "Why is the sky blue?")]
        let options = GenerationOptions(sampling: .greedy, maxTokens: 24)
        let raw = try Self.rawOutput(model, messages, options: options)
        #expect(!ChatFormat.opensThoughts(raw.prompt))
        try #require(!raw.text.drop { $0.isWhitespace }.hasPrefix("<think>"))
        let response = try await model.stream(messages, options: options).collect()
        #expect(response.text == raw.text)
        #expect(response.reasoning.isEmpty)
        // enable_thinking false writes an empty block of thoughts into Qwen3's prompt.
        let off = try #require(model.chatFormat).render(messages, enableThinking: false)
        #expect(off.hasSuffix("<think>\n\n</think>\n\n"))
    }
}
