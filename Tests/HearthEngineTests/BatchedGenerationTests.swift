import Foundation
import Hearth
import HearthTestSupport
import Synchronization
import Testing

/// One generation of the test: its prompt and options, when it joins (after the first
/// generation has made this many tokens; nil from the start), and when its reader stops it.
private struct Job: Sendable {
    var prompt: [Int32]
    var options: GenerationOptions
    var joinAfter: Int?
    var cancelAfter: Int?
}

/// What a generation gave: its tokens, text, finish reason and each token's log-probability
/// bits (equal bits mean equal arithmetic, not merely the same greedy choices).
private struct Outcome: Equatable, Sendable {
    var tokens: [Int32] = []
    var text = ""
    var finish: FinishReason?
    var logprobBits: [UInt32] = []

    mutating func add(_ chunk: GenerationChunk) {
        if let token = chunk.token { tokens.append(token) }
        if let logprob = chunk.logprob { logprobBits.append(logprob.bitPattern) }
        text += chunk.text
        finish = chunk.finishReason ?? finish
    }
}

private let models = Mutex<[String: TransformerModel]>([:])

private func model(_ name: String) throws -> TransformerModel {
    try models.withLock { cache in
        if let model = cache[name] { return model }
        let model = try TransformerModel(path: TestFiles.model(name), threads: 2)
        cache[name] = model
        return model
    }
}

/// Eight generations of different prompts, lengths, options and stop conditions. Two prompts
/// are longer than a pass's chunk, so their chunks share passes with other sequences' single
/// tokens; one reaches past Gemma 3's 512-position sliding window while short ones run beside it.
private func jobs(_ model: TransformerModel) -> [Job] {
    func tokens(_ text: String) -> [Int32] { model.tokenizer.encode(text, addSpecial: true, parseSpecial: false) }
    func greedy(_ maxTokens: Int, stop: [String] = []) -> GenerationOptions {
        var options = GenerationOptions(sampling: .greedy, maxTokens: maxTokens)
        options.stop = stop
        options.logprobs = true
        options.topLogprobs = 2
        return options
    }
    let story = String(repeating: "The river ran past the old mill, and the miller counted the sacks of flour one by one. ", count: 14)
    let long = Array(tokens(story + "In the end, the miller").prefix(300))
    let past = Array(tokens(String(repeating: story, count: 3)).prefix(540))
    var sampled = GenerationOptions(sampling: SamplingOptions(temperature: 0.8, topK: 40, topP: 0.95, seed: 11), maxTokens: 20)
    sampled.logprobs = true
    return [
        Job(prompt: tokens("The capital of France is"), options: greedy(40)),
        Job(prompt: tokens("def fibonacci(n):"), options: greedy(24)),
        Job(prompt: tokens("Once upon a time"), options: greedy(6)),
        Job(prompt: long, options: greedy(20), joinAfter: 3),
        Job(prompt: tokens("Water boils at"), options: greedy(40, stop: ["."]), joinAfter: 5),
        Job(prompt: tokens("List three colors:"), options: greedy(32), cancelAfter: 10),
        Job(prompt: tokens("1, 2, 3, 4,"), options: sampled, joinAfter: 12),
        Job(prompt: past, options: greedy(24), joinAfter: 2),
    ]
}

/// Each job alone, one after another, in a fresh sequence.
private func alone(_ model: TransformerModel, _ jobs: [Job]) throws -> [Outcome] {
    try jobs.map { job in
        var outcome = Outcome()
        let sequence = try model.makeSequence(contextLength: 1024)
        try model.generate(prompt: job.prompt, options: job.options, sequence: sequence) { chunk in
            outcome.add(chunk)
            return job.cancelAfter.map { outcome.tokens.count < $0 } ?? true
        }
        return outcome
    }
}

/// All jobs on one BatchedGenerator, joining as their `joinAfter` says.
private func together(_ model: TransformerModel, _ jobs: [Job]) async throws -> (outcomes: [Outcome], activity: BatchedGenerator.Activity) {
    let generator = try BatchedGenerator(model: model, maxRunning: 8)
    let outcomes = Mutex([Outcome](repeating: Outcome(), count: jobs.count))
    let joined = Mutex(Set<Int>())
    let sequences = try jobs.map { _ in try model.makeSequence(contextLength: 1024) }
    let errors = Mutex<[String]>([])
    try await withThrowingTaskGroup(of: Void.self) { group in
        let ended = AsyncStream.makeStream(of: Int.self)
        @Sendable func submit(_ index: Int) {
            let job = jobs[index]
            generator.submit(prompt: job.prompt, options: job.options, sequence: sequences[index], onChunk: { chunk in
                let made = outcomes.withLock { outcomes in
                    outcomes[index].add(chunk)
                    return outcomes[index].tokens.count
                }
                if index == 0 {
                    // Later jobs join between steps, while the first one is mid-way.
                    let due = jobs.indices.filter { jobs[$0].joinAfter.map { made >= $0 } ?? false }
                    let fresh = joined.withLock { joined in due.filter { joined.insert($0).inserted } }
                    fresh.forEach(submit)
                }
                return job.cancelAfter.map { made < $0 } ?? true
            }, onEnd: { error in
                if let error { errors.withLock { $0.append("job \(index): \(error)") } }
                if index == 0 {
                    // Whatever has not joined yet joins now, so the test ends even when the
                    // first job stops early.
                    let rest = joined.withLock { joined in jobs.indices.filter { jobs[$0].joinAfter != nil && joined.insert($0).inserted } }
                    rest.forEach(submit)
                }
                ended.continuation.yield(index)
            })
        }
        for index in jobs.indices where jobs[index].joinAfter == nil { submit(index) }
        group.addTask {
            var count = 0
            for await _ in ended.stream {
                count += 1
                if count == jobs.count { break }
            }
        }
        try await group.waitForAll()
    }
    #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
    return (outcomes.withLock { $0 }, generator.activity)
}

@Suite("Generations in shared passes equal generations alone")
struct BatchedGenerationTests {
    @Test("8 prompts generated together, joining and leaving mid-way, give exactly the answers of 8 runs alone",
          arguments: [TestFiles.smolLM2, TestFiles.gemma3])
    func togetherEqualsAlone(_ name: String) async throws {
        let model = try model(name)
        let jobs = jobs(model)
        let solo = try alone(model, jobs)
        let (batched, activity) = try await together(model, jobs)
        for index in jobs.indices {
            #expect(batched[index] == solo[index], "job \(index) of \(name): together \(batched[index].text.debugDescription), alone \(solo[index].text.debugDescription)")
        }
        // The jobs end as they should, so joining and leaving really happened mid-way.
        #expect(solo[2].finish == .length && solo[2].tokens.count == 6)
        #expect(solo[5].finish == .cancelled && solo[5].tokens.count == 10)
        #expect(solo[7].tokens.count == 24, "the long prompt generates past the sliding window")
        // Passes were shared: far fewer than the jobs' passes one after another.
        let alonePasses = zip(jobs, solo).reduce(0) { $0 + ($1.0.prompt.count + 127) / 128 + $1.1.tokens.count - 1 }
        #expect(activity.mostSequences >= 6, "\(activity)")
        #expect(activity.passes < alonePasses * 2 / 3, "\(activity.passes) passes, \(alonePasses) alone")
    }

    @Test("one pass over several sequences gives each the logits it gets alone, bit for bit",
          arguments: [TestFiles.smolLM2, TestFiles.gemma3])
    func passIsBatchInvariant(_ name: String) throws {
        let model = try model(name)
        let texts = ["Hello there", "A much longer opening line for a story about", "x", "Numbers: 1 2 3"]
        let prompts = texts.map { model.tokenizer.encode($0, addSpecial: true, parseSpecial: false) }
        // Alone: each prompt in one pass, then one more token.
        var aloneLogits: [[Float]] = []
        for prompt in prompts {
            let sequence = try model.makeSequence(contextLength: 64)
            try model.evaluate(prompt, sequence: sequence)
            aloneLogits.append(Array(try model.evaluate([42], sequence: sequence)))
        }
        // Together: the prompts in one pass, then every sequence's next token in one pass.
        let sequences = try prompts.map { _ in try model.makeSequence(contextLength: 64) }
        var batch = Batch()
        for (prompt, sequence) in zip(prompts, sequences) { try batch.add(prompt, to: sequence) }
        try model.evaluate(batch)
        var next = Batch()
        for sequence in sequences { try next.add([42], to: sequence) }
        var seen = 0
        try model.evaluate(next) { _, index, _ in
            #expect(index == 0)
            seen += 1
        }
        #expect(seen == sequences.count)
        for (sequence, expected) in zip(sequences, aloneLogits) {
            #expect(sequence.logits.bits == FloatRows.bits(expected))
        }
        // A sequence holds one run of rows per pass.
        var twice = Batch()
        try twice.add([1], to: sequences[0])
        #expect(throws: HearthError.self) { try twice.add([2], to: sequences[0]) }
    }

    @Test("a copied prefix continues exactly as the sequence it came from")
    func copiedPrefixContinues() throws {
        let model = try model(TestFiles.smolLM2)
        let prompt = model.tokenizer.encode("The three primary colors are red,", addSpecial: true, parseSpecial: false)
        let original = try model.makeSequence(contextLength: 64)
        try model.evaluate(prompt, sequence: original)
        let copy = try model.makeSequence(contextLength: 64)
        try original.copyPrefix(prompt.count - 2, to: copy)
        #expect(copy.tokens == Array(prompt.prefix(prompt.count - 2)))
        let continued = Array(try model.evaluate(Array(prompt.suffix(2)), sequence: copy))
        #expect(FloatRows.bits(continued) == original.logits.bits)
        #expect(throws: HearthError.self) { try original.copyPrefix(prompt.count + 1, to: copy) }
        let stranger = try TinyLlama().load()
        #expect(throws: HearthError.self) { try original.copyPrefix(2, to: try stranger.makeSequence(contextLength: 8)) }
    }
}
