import Foundation
import Hearth
import HearthTestSupport
import Testing

/// One greedy case from the Gemma 3 references (llama-cpp-python's llama.cpp): prompt ids and
/// the ids of the first generated tokens.
struct Gemma3Case: Decodable, CustomTestStringConvertible, Sendable {
    let prompt: String
    let prompt_ids: [Int32]
    let ids: [Int32]
    let continuation: String
    var testDescription: String { String(prompt.prefix(40)) }
}

private struct Gemma3References: Decodable {
    let greedy: [Gemma3Case]
}

private func gemma3Cases() throws -> [Gemma3Case] {
    try JSONDecoder().decode(Gemma3References.self, from: TestFiles.reference("gemma3.json")).greedy
}

private let sharedGemma3 = Result { try TransformerModel(path: TestFiles.model(TestFiles.gemma3), threads: 2) }

@Suite("Gemma 3 against llama.cpp")
struct Gemma3Tests {
    @Test("greedy tokens equal llama.cpp's", arguments: try gemma3Cases())
    func greedyMatchesLlamaCpp(_ reference: Gemma3Case) throws {
        let model = try sharedGemma3.get()
        let prompt = model.tokenizer.encode(reference.prompt, addSpecial: true, parseSpecial: false)
        #expect(prompt == reference.prompt_ids)
        let state = try model.makeSequence(contextLength: 256)
        var ids: [Int32] = []
        var text = ""
        try model.generate(prompt: prompt, options: GenerationOptions(sampling: .greedy, maxTokens: reference.ids.count), sequence: state) { chunk in
            if let token = chunk.token { ids.append(token) }
            text += chunk.text
            return true
        }
        #expect(ids == reference.ids)
        #expect(text == reference.continuation)
    }

    @Test("a Gemma file without a template gets Gemma 3's, with BOS once")
    func chatFormat() throws {
        let model = try sharedGemma3.get()
        let format = try ChatFormat(gguf: model.gguf)
        #expect(!format.isModelTemplate)
        let text = try format.render([ChatMessage(role: .user, content: "What is the capital of France?")], system: "Be brief.")
        #expect(text == "<start_of_turn>user\nBe brief.\n\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n")
        let prompt = model.tokenizer.encode(text, addSpecial: true, parseSpecial: true)
        #expect(prompt.first == 2)
        #expect(prompt.dropFirst().first != 2)
        #expect(prompt.filter { $0 == 2 }.count == 1)
    }

    @Test("sliding-window layers see only their window")
    func slidingWindowLimitsAttention() throws {
        let model = try sharedGemma3.get()
        #expect(model.configuration.architecture == "gemma3")
        // A prompt longer than a small context is an error, not a crash; the real window (512)
        // is exercised by generating past it.
        let state = try model.makeSequence(contextLength: 600)
        let prompt = Array(model.tokenizer.encode(String(repeating: "one two three four ", count: 140),
                                                  addSpecial: true, parseSpecial: false).prefix(560))
        #expect(prompt.count == 560)
        let logits = try model.evaluate(prompt, sequence: state)
        #expect(logits.allSatisfy { $0.isFinite })
        #expect(state.position == 560)
    }
}
