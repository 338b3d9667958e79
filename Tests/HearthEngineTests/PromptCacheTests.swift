import Foundation
import Hearth
import HearthTestSupport
import Testing

/// What one generation gave: its tokens, each one's log-probability bits (equal bits mean
/// equal arithmetic) and its statistics.
private struct Run {
    var tokens: [Int32] = []
    var logprobBits: [UInt32] = []
    var statistics = GenerationStatistics()

    mutating func add(_ chunk: GenerationChunk) {
        if let token = chunk.token { tokens.append(token) }
        if let logprob = chunk.logprob { logprobBits.append(logprob.bitPattern) }
        if let statistics = chunk.statistics { self.statistics = statistics }
    }
}

private let options: GenerationOptions = {
    var options = GenerationOptions(sampling: .greedy, maxTokens: 12)
    options.logprobs = true
    return options
}()

private func run(_ generator: BatchedGenerator, _ prompt: [Int32], in sequence: SequenceState) async throws -> Run {
    var result = Run()
    for try await chunk in generator.stream(prompt: prompt, options: options, sequence: sequence) { result.add(chunk) }
    return result
}

private func alone(_ model: TransformerModel, _ prompt: [Int32]) throws -> Run {
    var result = Run()
    try model.generate(prompt: prompt, options: options, sequence: try model.makeSequence(contextLength: 1024)) { chunk in
        result.add(chunk)
        return true
    }
    return result
}

@Suite("A prompt starts from any sequence's shared beginning and from the prompt cache", .serialized)
struct PromptCacheTests {
    /// Three questions after one long system text, and an unrelated prompt that makes
    /// sequences move on.
    struct Prompts {
        let system: [Int32]
        let first: [Int32], second: [Int32], third: [Int32], other: [Int32]

        init(_ model: TransformerModel) {
            func tokens(_ text: String) -> [Int32] { model.tokenizer.encode(text, addSpecial: true, parseSpecial: false) }
            let system = String(repeating: "You answer questions about rivers, mills and flour, briefly and in plain words. ", count: 20)
            self.system = tokens(system)
            first = tokens(system + "Question: what does a miller do?")
            second = tokens(system + "Question: where does the river go?")
            third = tokens(system + "Question: how is flour stored?")
            other = tokens("The capital of France is")
        }

        /// Tokens `prompt` shares with the system text's tokens, in whole chunks of `chunk`.
        func shared(_ prompt: [Int32], chunk: Int = 128) -> Int {
            let shared = zip(system, prompt).prefix { $0 == $1 }.count
            return shared - shared % chunk
        }
    }

    @Test("another sequence's beginning, then a kept copy, serve later prompts; answers are bit for bit the answers alone",
          arguments: [TestFiles.smolLM2, TestFiles.gemma3])
    func sharedBeginnings(file: String) async throws {
        let model = try TransformerModel(path: TestFiles.model(file), threads: 2)
        let prompts = Prompts(model)
        let generator = try BatchedGenerator(model: model, maxRunning: 4, promptCacheBytes: 256 << 20)
        let a = try model.makeSequence(contextLength: 1024)
        let b = try model.makeSequence(contextLength: 1024)
        let c = try model.makeSequence(contextLength: 1024)

        let first = try await run(generator, prompts.first, in: a)
        #expect(first.statistics.cachedPromptTokens == 0)
        #expect(first.logprobBits == (try alone(model, prompts.first)).logprobBits)

        // b is fresh: it starts from what a holds.
        let second = try await run(generator, prompts.second, in: b)
        #expect(second.statistics.cachedPromptTokens == prompts.shared(prompts.second))
        #expect(prompts.shared(prompts.second) >= 256)
        #expect(second.statistics.cachedPromptTokens < prompts.second.count)
        let secondAlone = try alone(model, prompts.second)
        #expect(second.tokens == secondAlone.tokens)
        #expect(second.logprobBits == secondAlone.logprobBits)
        #expect(generator.activity.borrowedPrefixes == 1)
        #expect(generator.activity.cachedSequences == 0)

        // Both move on to another prompt. They held the same whole chunks (the system text's;
        // the questions end in part-chunks): while b holds them the cache needs no copy, and
        // once b moves on too the cache keeps them once.
        _ = try await run(generator, prompts.other, in: a)
        #expect(generator.activity.cachedSequences == 0)
        _ = try await run(generator, prompts.other, in: b)
        #expect(generator.activity.cachedSequences == 1)
        #expect(generator.activity.cachedBytes
            == prompts.shared(prompts.first) * model.configuration.kvWidth * model.configuration.blockCount * 4)

        // c starts from a kept copy: no live sequence holds the system text any more.
        let third = try await run(generator, prompts.third, in: c)
        #expect(third.statistics.cachedPromptTokens == prompts.shared(prompts.third))
        let thirdAlone = try alone(model, prompts.third)
        #expect(third.tokens == thirdAlone.tokens)
        #expect(third.logprobBits == thirdAlone.logprobBits)
        #expect(generator.activity.borrowedPrefixes == 2)
    }

    @Test("the cache holds no more than its bytes: least recently used copies go first, none when none fits")
    func byteLimit() async throws {
        let model = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        func tokens(_ text: String) -> [Int32] { model.tokenizer.encode(text, addSpecial: true, parseSpecial: false) }
        let rivers = String(repeating: "You answer questions about rivers, mills and flour, briefly and in plain words. ", count: 20)
        let stars = String(repeating: "Speak of stars, planets and comets as an old astronomer would, with care. ", count: 20)
        let other = tokens("The capital of France is")
        let positionBytes = model.configuration.kvWidth * model.configuration.blockCount * 2 * 2
        // Room for one copy of 256 positions, not two.
        let limit = 300 * positionBytes
        let generator = try BatchedGenerator(model: model, maxRunning: 2, promptCacheBytes: limit)
        let a = try model.makeSequence(contextLength: 1024)
        _ = try await run(generator, tokens(rivers + "Question: what does a miller do?"), in: a)
        _ = try await run(generator, other, in: a)
        #expect(generator.activity.cachedSequences == 1)
        _ = try await run(generator, tokens(stars + "Question: what is a comet?"), in: a)
        #expect(generator.activity.borrowedPrefixes == 0)
        _ = try await run(generator, other, in: a)
        #expect(generator.activity.cachedSequences == 1)
        #expect(generator.activity.cachedBytes > 0 && generator.activity.cachedBytes <= limit)
        // The rivers' copy went to make room for the stars'.
        let riversAgain = try await run(generator, tokens(rivers + "Question: how is flour stored?"), in: try model.makeSequence(contextLength: 1024))
        #expect(riversAgain.statistics.cachedPromptTokens == 0)
        let planet = tokens(stars + "Question: what is a planet?")
        let starsAgain = try await run(generator, planet, in: try model.makeSequence(contextLength: 1024))
        #expect(starsAgain.statistics.cachedPromptTokens >= 256)
        #expect(starsAgain.logprobBits == (try alone(model, planet)).logprobBits)

        let none = try BatchedGenerator(model: model, maxRunning: 2, promptCacheBytes: 0)
        let d = try model.makeSequence(contextLength: 1024)
        _ = try await run(none, tokens(rivers + "Question: what does a miller do?"), in: d)
        _ = try await run(none, other, in: d)
        #expect(none.activity.cachedSequences == 0)
        let prompt = tokens(rivers + "Question: where does the river go?")
        let again = try await run(none, prompt, in: try model.makeSequence(contextLength: 1024))
        #expect(again.statistics.cachedPromptTokens == 0)
        #expect(again.tokens == (try alone(model, prompt)).tokens)
    }

    @Test("positions are shared only between sequences of one context length and chunk size; a refused prompt changes nothing")
    func compatibilityAndRefusals() async throws {
        let model = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        let prompts = Prompts(model)
        let generator = try BatchedGenerator(model: model, maxRunning: 2, promptCacheBytes: 256 << 20)
        let a = try model.makeSequence(contextLength: 1024)
        _ = try await run(generator, prompts.first, in: a)
        // Another context length or chunk size: nothing is borrowed, the answer is still right.
        for other in [try model.makeSequence(contextLength: 2048), try model.makeSequence(contextLength: 1024, chunkSize: 64)] {
            let answer = try await run(generator, prompts.second, in: other)
            #expect(answer.statistics.cachedPromptTokens == 0)
            #expect(answer.tokens == (try alone(model, prompts.second)).tokens)
        }
        #expect(generator.activity.borrowedPrefixes == 0)
        // A prompt that cannot run (a token outside the vocabulary) fails and leaves a's
        // positions alone: the next prompt still starts from them.
        let held = a.tokens
        let bad = prompts.other + [Int32(model.configuration.vocabularySize)]
        await #expect(throws: HearthError.self) { _ = try await run(generator, bad, in: a) }
        #expect(a.tokens == held)
        let again = try await run(generator, prompts.third, in: a)
        #expect(again.statistics.cachedPromptTokens >= prompts.shared(prompts.third))
        // A one-token prompt in a still keeps what a held.
        _ = try await run(generator, [prompts.other[0]], in: a)
        #expect(generator.activity.cachedSequences == 1)
    }
}
