import Foundation
import Hearth
import HearthTestSupport
import Testing

/// One greedy case from the llama.cpp references: a prompt and the text of its first tokens.
struct GreedyCase: Decodable, CustomTestStringConvertible, Sendable {
    let prompt: String
    let n: Int
    let continuation: String
    var testDescription: String { String(prompt.prefix(40)) }
}

private struct GreedyReferences: Decodable {
    let greedy: [GreedyCase]
}

private func smolLM2Cases() throws -> [GreedyCase] {
    try JSONDecoder().decode(GreedyReferences.self, from: TestFiles.reference("smollm2.json")).greedy
}

/// The model is mapped once for the whole suite; each test makes its own state.
private let sharedSmolLM2 = Result { try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2) }

private func greedy(_ model: TransformerModel, prompt tokens: [Int32], count: Int, batchSize: Int = 128) throws -> [Int32] {
    let state = try model.makeSequence(contextLength: 512, chunkSize: batchSize)
    var out: [Int32] = []
    try model.generate(prompt: tokens, options: GenerationOptions(sampling: .greedy, maxTokens: count), sequence: state) { chunk in
        if let token = chunk.token { out.append(token) }
        return true
    }
    return out
}

@Suite("SmolLM2 against llama.cpp")
struct SmolLM2Tests {
    @Test("greedy continuation equals llama.cpp's", arguments: try smolLM2Cases())
    func greedyMatchesLlamaCpp(_ reference: GreedyCase) throws {
        let model = try sharedSmolLM2.get()
        let prompt = model.tokenizer.encode(reference.prompt, addSpecial: true, parseSpecial: false)
        let generated = try greedy(model, prompt: prompt, count: reference.n)
        let text = model.tokenizer.decode(generated)
        #expect(text == reference.continuation)
    }

    @Test("the chat prompt renders and answers as in the references")
    func chatAnswer() throws {
        let model = try sharedSmolLM2.get()
        let format = try ChatFormat(gguf: model.gguf)
        let text = try format.render([ChatMessage(role: .user, content: "What is 2+2?")])
        #expect(text == "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n")
        let prompt = model.tokenizer.encode(text, addSpecial: true, parseSpecial: true)
        #expect(prompt == [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
                           19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 216, 34, 27, 34, 47, 2, 198, 1, 520, 9531, 198])
        let state = try model.makeSequence(contextLength: 256)
        var tokens: [Int32] = []
        var reply = ""
        var finish: FinishReason?
        try model.generate(prompt: prompt, options: GenerationOptions(sampling: .greedy, maxTokens: 40), sequence: state) { chunk in
            if let token = chunk.token { tokens.append(token) }
            reply += chunk.text
            finish = chunk.finishReason ?? finish
            return true
        }
        #expect(reply == "The answer to this classic math problem is 4.")
        #expect(tokens == [504, 2988, 288, 451, 8170, 4119, 1732, 314, 216, 36, 30])
        #expect(finish == .stop)
    }

    @Test("a prompt evaluated in one batch and token by token gives nearly the same logits")
    func batchAgreesWithSequential() throws {
        let model = try sharedSmolLM2.get()
        let prompts = ["The quick brown fox jumps over the lazy dog because", "def fibonacci(n):", "Water boils at"]
        for text in prompts {
            let prompt = model.tokenizer.encode(text, addSpecial: true, parseSpecial: false)
            let batched = try model.makeSequence(contextLength: 64)
            let a = Array(try model.evaluate(prompt, sequence: batched))
            let sequential = try model.makeSequence(contextLength: 64, chunkSize: 1)
            var b: [Float] = []
            for token in prompt { b = Array(try model.evaluate([token], sequence: sequential)) }
            // Like llama.cpp's (which each path reproduces bit for bit), the two paths sum
            // attention in different orders, and int8 activations turn those last-bit
            // differences into small but visible ones: the logits agree as a whole, not bit
            // for bit (cosine 0.997 for the first prompt, as in llama.cpp).
            let dot = zip(a, b).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
            let cosine = dot / (sqrt(a.reduce(0.0) { $0 + Double($1 * $1) }) * sqrt(b.reduce(0.0) { $0 + Double($1 * $1) }))
            print("batch vs sequential cosine for \(text.debugDescription): \(cosine)")
            #expect(cosine > 0.99)
            let topA = Set(a.indices.sorted { a[$0] > a[$1] }.prefix(5))
            let bestB = b.indices.max { b[$0] < b[$1] }!
            #expect(topA.contains(bestB))
        }
    }

    @Test("one thread and two threads generate the same tokens")
    func threadCountDoesNotChangeOutput() throws {
        let two = try sharedSmolLM2.get()
        let one = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 1)
        let prompt = two.tokenizer.encode("Once upon a time", addSpecial: true, parseSpecial: false)
        #expect(try greedy(one, prompt: prompt, count: 16) == greedy(two, prompt: prompt, count: 16))
    }

    @Test("the context limit is a clear error, not a crash")
    func contextOverflow() throws {
        let model = try sharedSmolLM2.get()
        let state = try model.makeSequence(contextLength: 8)
        #expect(throws: HearthError.contextOverflow(needed: 9, limit: 8)) {
            try model.evaluate(Array(repeating: 1, count: 9), sequence: state)
        }
        #expect(throws: HearthError.self) { try model.evaluate([-1], sequence: state) }
        #expect(throws: HearthError.self) { try model.evaluate([49152], sequence: state) }
    }

    @Test("seeded sampling repeats itself")
    func seededSamplingIsRepeatable() throws {
        let model = try sharedSmolLM2.get()
        let prompt = model.tokenizer.encode("My favourite food is", addSpecial: true, parseSpecial: false)
        func sample(seed: UInt64) throws -> [Int32] {
            let state = try model.makeSequence(contextLength: 64)
            var out: [Int32] = []
            try model.generate(prompt: prompt, options: GenerationOptions(sampling: SamplingOptions(temperature: 1.0, seed: seed), maxTokens: 12), sequence: state) {
                if let t = $0.token { out.append(t) }
                return true
            }
            return out
        }
        #expect(try sample(seed: 42) == sample(seed: 42))
        #expect(try sample(seed: 42) != sample(seed: 7))
    }
}
