import Foundation
import Hearth
import HearthTestSupport
import Testing

/// How far llama.cpp's quantized KV caches move its top logprobs from its half-precision cache,
/// on the reference prompts and continuations (scripts/make-kv-cache-fixtures.py).
private struct CacheDriftReferences: Decodable {
    struct Drift: Decodable {
        let mean: Double, max: Double, agree: Double, positions: Int
    }
    struct Model: Decodable {
        let model: String
        let sequences: [[Int32]]
        let drift: [String: Drift]
    }
    let top: Int
    let models: [String: Model]
}

/// What a cache type does to one model's logprobs, measured as the fixture measures llama.cpp's.
private struct Drift: CustomStringConvertible {
    var mean = 0.0, max = 0.0, agree = 0.0, positions = 0
    var description: String {
        String(format: "mean %.4f, max %.4f, top-1 agreement %.3f over %d positions", mean, max, agree, positions)
    }
}

@Suite("KV caches in Q8_0 and Q4_0")
struct KVCacheTypeTests {
    private static let references = Result {
        try JSONDecoder().decode(CacheDriftReferences.self, from: TestFiles.reference("kv-cache.json"))
    }

    /// Each row's logits and their log-sum-exp (in double), for every token of `tokens`
    /// evaluated in one pass on a cache of `types`.
    private func rows(_ model: TransformerModel, _ tokens: [Int32], _ types: KVCacheTypes) throws -> [(logits: [Float], total: Double)] {
        let sequence = try model.makeSequence(contextLength: 512, chunkSize: 512, cacheTypes: types)
        var batch = Batch()
        try batch.add(tokens, to: sequence, logits: .all)
        var rows: [(logits: [Float], total: Double)] = []
        try model.evaluate(batch) { _, _, logits in
            rows.append((Array(logits), FloatRows.logSumExp(logits)))
        }
        return rows
    }

    /// The fixture's drift: at each position, the largest change among the `top` tokens the
    /// half-precision cache ranks highest, and whether the most likely token stays.
    private func drift(_ model: TransformerModel, _ sequences: [[Int32]], _ types: KVCacheTypes, top: Int) throws -> Drift {
        var result = Drift(), agreeing = 0
        for tokens in sequences {
            for (b, q) in zip(try rows(model, tokens, .f16), try rows(model, tokens, types)) {
                let ranked = FloatRows.highest(b.logits, top)
                let change = ranked.map { abs((Double(q.logits[$0]) - q.total) - (Double(b.logits[$0]) - b.total)) }.max()!
                result.mean += change
                result.max = Swift.max(result.max, change)
                if FloatRows.highest(q.logits, 1) == [ranked[0]] { agreeing += 1 }
                result.positions += 1
            }
        }
        result.mean /= Double(result.positions)
        result.agree = Double(agreeing) / Double(result.positions)
        return result
    }

    @Test("a quantized cache moves the top logprobs about as far from the half-precision cache as llama.cpp's does",
          arguments: ["smollm2", "gemma3"], [KVCacheType.q8_0, .q4_0])
    func driftWithinLlamaCpp(_ name: String, _ type: KVCacheType) throws {
        let references = try Self.references.get()
        let reference = try #require(references.models[name])
        let model = try TransformerModel(path: TestFiles.model(reference.model), threads: 2)
        let llama = try #require(reference.drift[type.rawValue])
        let hearth = try drift(model, reference.sequences, KVCacheTypes(keys: type, values: type), top: references.top)
        #expect(hearth.positions == llama.positions)
        // Equivalent arithmetic moves this mean by a few percent either way (float queries for
        // quantized keys, least-squares Q4_0 scales, weights rounded through half precision: all
        // measured within ±5% of it), and so do the two baselines' own roundings (llama.cpp's
        // half-precision cache runs with flash attention, Hearth's as llama.cpp without it).
        #expect(hearth.mean <= 1.08 * llama.mean, "Hearth \(hearth); llama.cpp mean \(llama.mean)")
        #expect(hearth.agree >= llama.agree - 0.01, "Hearth \(hearth); llama.cpp agreement \(llama.agree)")
        print("\(name) \(type): Hearth \(hearth); llama.cpp mean \(llama.mean), max \(llama.max), agreement \(llama.agree)")
    }

    @Test("a Q8_0 cache takes 53% of a half-precision one's bytes and a Q4_0 cache 28%; copies keep the type")
    func bytesAndCopies() throws {
        let model = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        func sequence(_ type: KVCacheType) throws -> SequenceState {
            try model.makeSequence(contextLength: 256, cacheTypes: KVCacheTypes(keys: type, values: type))
        }
        let half = try sequence(.f16), q8 = try sequence(.q8_0), q4 = try sequence(.q4_0)
        // SmolLM2: 30 layers of 3 key/value heads 64 wide, keys and values.
        #expect(half.cacheBytes == 256 * 30 * 3 * 2 * 128)
        #expect(Double(q8.cacheBytes) / Double(half.cacheBytes) == 34.0 / 64)
        #expect(Double(q4.cacheBytes) / Double(half.cacheBytes) == 18.0 / 64)
        #expect(model.memoryEstimate(contextLength: 256) - model.memoryEstimate(contextLength: 256, cacheTypes: .init(keys: .q4_0, values: .q4_0))
                == half.cacheBytes - q4.cacheBytes)

        let prompt = model.tokenizer.encode("The capital of France is", addSpecial: true, parseSpecial: false)
        try model.evaluate(prompt, sequence: q4)
        let copy = try sequence(.q4_0)
        try q4.copyPrefix(prompt.count, to: copy)
        #expect(copy.tokens == prompt)
        // The copied keys and values are the ones read next: the same token gives the same bits.
        let next = try model.evaluate([prompt.last!], sequence: q4).argmax
        let fromCopy = try model.evaluate([prompt.last!], sequence: copy)
        #expect(fromCopy.argmax == next)
        #expect(q4.logits.bits == fromCopy.bits)
        #expect(throws: HearthError.self) { try q4.copyPrefix(prompt.count, to: half) }
    }

    @Test("sequences with caches of different types in one pass each get the bits they get alone",
          arguments: [TestFiles.smolLM2, TestFiles.gemma3])
    func mixedTypesInOnePass(_ file: String) throws {
        let model = try TransformerModel(path: TestFiles.model(file), threads: 2)
        let types = [KVCacheTypes.f16, KVCacheTypes(keys: .q8_0, values: .q8_0), KVCacheTypes(keys: .f16, values: .q4_0),
                     KVCacheTypes(keys: .q4_0, values: .f16)]
        let prompts = ["The capital of France is", "Once upon a time, in a small village,", "Water boils at", "def fibonacci(n):"]
            .map { model.tokenizer.encode($0, addSpecial: true, parseSpecial: false) }
        // Alone: each prompt, then one token more.
        var alone: [[UInt32]] = []
        for (type, prompt) in zip(types, prompts) {
            let sequence = try model.makeSequence(contextLength: 128, cacheTypes: type)
            let first = try model.evaluate(prompt, sequence: sequence).argmax
            alone.append(sequence.logits.bits)
            alone.append(try model.evaluate([first], sequence: sequence).bits)
        }
        // Together: every prompt in one pass, then every next token in one pass.
        let sequences = try types.map { try model.makeSequence(contextLength: 128, cacheTypes: $0) }
        var batch = Batch()
        for (sequence, prompt) in zip(sequences, prompts) { try batch.add(prompt, to: sequence) }
        try model.evaluate(batch)
        let firsts = sequences.map { $0.logits.argmax }
        let promptBits = sequences.map { $0.logits.bits }
        var step = Batch()
        for (sequence, token) in zip(sequences, firsts) { try step.add([token], to: sequence) }
        try model.evaluate(step)
        for i in types.indices {
            #expect(promptBits[i] == alone[2 * i], "\(types[i]): the prompt's logits")
            #expect(sequences[i].logits.bits == alone[2 * i + 1], "\(types[i]): the next token's logits")
        }
    }

    @Test("a quantized cache refuses heads it cannot hold in whole blocks, saying what to use")
    func headsOutsideBlocks() throws {
        let types = KVCacheTypes(keys: .q8_0, values: .f16)
        let smol = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 1).configuration
        /// SmolLM2's configuration with heads of `d` values in its first `layers` cache layers.
        func heads(_ d: Int, layers: Int? = nil) -> ModelConfiguration {
            var c = smol
            for i in 0..<(layers ?? c.cacheShapes.count) { c.cacheShapes[i].headDimension = d }
            return c
        }
        #expect(throws: HearthError.invalidArgument(
            "A q8_0 KV cache needs heads of a multiple of 32 values; this model's have 80. Use f16.")) { try types.check(heads(80)) }
        try types.check(heads(96))
        // Layers of their own head size (Gemma 4's sliding and global ones) are each checked.
        #expect(throws: HearthError.invalidArgument(
            "A q8_0 KV cache needs heads of a multiple of 32 values; this model's have 80. Use f16.")) { try types.check(heads(80, layers: 1)) }
        #expect(try KVCacheType(parsing: "Q4_0") == .q4_0)
        #expect(throws: HearthError.self) { try KVCacheType(parsing: "q4_1") }
    }
}
