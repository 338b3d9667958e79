import Foundation
import Hearth
import HearthTestSupport
import Testing

/// The hybrid tiny models (LFM2: short convolutions in three blocks of four; Qwen3.5: gated
/// DeltaNet in three of four; Granite 4: Mamba-2 in three of four), each written and loaded once.
private let hybrids: [String: TransformerModel] = {
    var models: [String: TransformerModel] = [:]
    for spec in TinyModel.catalog where ["lfm2-b", "qwen35-b", "granitehybrid-b"].contains(spec.name) {
        if let folder = try? TemporaryDirectory.shared("recurrent"), let path = try? spec.write(in: folder) { models[spec.name] = try? TransformerModel(path: path, threads: 2) }
    }
    return models
}()

private func hybrid(_ name: String) throws -> TransformerModel {
    try #require(hybrids[name], "the \(name) tiny model could not be written or loaded")
}

private func tokens(_ model: TransformerModel, _ text: String) -> [Int32] {
    model.tokenizer.encode(text, addSpecial: true, parseSpecial: false)
}

private let longText = String(repeating: "The mill stands by the river, and the miller grinds the grain into flour. ", count: 14)

private func bits(_ logits: Logits) -> [UInt32] { logits.bits }

@Suite("Hybrid models keep a recurrent state beside the KV cache, with checkpoints at whole chunks")
struct RecurrentStateTests {
    @Test("rewinding goes back to the last checkpoint; evaluating on from there gives the same bits",
          arguments: ["lfm2-b", "qwen35-b", "granitehybrid-b"])
    func rewindToCheckpoint(name: String) throws {
        let model = try hybrid(name)
        let prompt = tokens(model, longText)
        #expect(prompt.count > 200)
        let sequence = try model.makeSequence(contextLength: 1024, chunkSize: 64)
        let whole = bits(try model.evaluate(prompt, sequence: sequence))

        // Checkpoints at 64, 128, 192 (whole chunks from the start); the position itself.
        #expect(sequence.restorablePosition(atMost: 200) == 192)
        #expect(sequence.restorablePosition(atMost: 63) == 0)
        #expect(sequence.restorablePosition(atMost: prompt.count) == prompt.count)
        sequence.rewind(to: 200)
        #expect(sequence.position == 192)
        #expect(bits(try model.evaluate(Array(prompt[192...]), sequence: sequence)) == whole)

        sequence.rewind(to: 40)
        #expect(sequence.position == 0)
        #expect(bits(try model.evaluate(prompt, sequence: sequence)) == whole)
    }

    @Test("a copy of a checkpoint's positions goes on as the original; other positions are refused by name",
          arguments: ["lfm2-b", "qwen35-b", "granitehybrid-b"])
    func copyPrefix(name: String) throws {
        let model = try hybrid(name)
        let prompt = tokens(model, longText)
        let source = try model.makeSequence(contextLength: 1024, chunkSize: 64)
        let whole = bits(try model.evaluate(prompt, sequence: source))

        let copy = try model.makeSequence(contextLength: 1024, chunkSize: 64)
        try source.copyPrefix(128, to: copy)
        #expect(copy.position == 128)
        #expect(bits(try model.evaluate(Array(prompt[128...]), sequence: copy)) == whole)
        // The copy keeps the checkpoints up to where it starts.
        #expect(copy.restorablePosition(atMost: 100) == 64)

        let other = try model.makeSequence(contextLength: 1024, chunkSize: 64)
        #expect(throws: HearthError.self) { try source.copyPrefix(100, to: other) }
        #expect(other.position == 0)
        #expect(source.cacheBytes > 4 * model.recurrentStateBytes)
    }

    @Test("a regenerated answer equals the first, read again from the last checkpoint of its prompt",
          arguments: ["lfm2-b", "qwen35-b", "granitehybrid-b"])
    func regenerate(name: String) throws {
        let model = try hybrid(name)
        let prompt = tokens(model, longText)
        var options = GenerationOptions(sampling: .greedy, maxTokens: 10)
        options.logprobs = true
        func generate(_ sequence: SequenceState) throws -> (tokens: [Int32], bits: [UInt32], cached: Int) {
            var result: (tokens: [Int32], bits: [UInt32], cached: Int) = ([], [], 0)
            try model.generate(prompt: prompt, options: options, sequence: sequence) { chunk in
                if let token = chunk.token { result.tokens.append(token) }
                if let logprob = chunk.logprob { result.bits.append(logprob.bitPattern) }
                if let statistics = chunk.statistics { result.cached = statistics.cachedPromptTokens }
                return true
            }
            return result
        }
        let sequence = try model.makeSequence(contextLength: 1024, chunkSize: 64)
        let first = try generate(sequence)
        let again = try generate(sequence)
        #expect(first.cached == 0)
        #expect(again.cached == (prompt.count - 1) / 64 * 64)
        #expect(again.tokens == first.tokens)
        #expect(again.bits == first.bits)
    }

    @Test("a shared beginning is read once: a second prompt starts from the first's checkpoint, bit for bit as alone",
          arguments: ["lfm2-b", "qwen35-b", "granitehybrid-b"])
    func sharedBeginning(name: String) async throws {
        let model = try hybrid(name)
        var options = GenerationOptions(sampling: .greedy, maxTokens: 8)
        options.logprobs = true
        let first = tokens(model, longText + "Question: what does a miller do?")
        let second = tokens(model, longText + "Question: where does the river go?")
        let shared = zip(first, second).prefix { $0 == $1 }.count
        let generator = try BatchedGenerator(model: model, maxRunning: 4, promptCacheBytes: 64 << 20)
        func run(_ prompt: [Int32], _ sequence: SequenceState) async throws -> (bits: [UInt32], cached: Int) {
            var result: (bits: [UInt32], cached: Int) = ([], 0)
            for try await chunk in generator.stream(prompt: prompt, options: options, sequence: sequence) {
                if let logprob = chunk.logprob { result.bits.append(logprob.bitPattern) }
                if let statistics = chunk.statistics { result.cached = statistics.cachedPromptTokens }
            }
            return result
        }
        func alone(_ prompt: [Int32]) throws -> [UInt32] {
            var bits: [UInt32] = []
            try model.generate(prompt: prompt, options: options, sequence: try model.makeSequence(contextLength: 1024)) { chunk in
                if let logprob = chunk.logprob { bits.append(logprob.bitPattern) }
                return true
            }
            return bits
        }
        let a = try model.makeSequence(contextLength: 1024), b = try model.makeSequence(contextLength: 1024)
        _ = try await run(first, a)
        let borrowed = try await run(second, b)
        #expect(shared >= 128)
        #expect(borrowed.cached == shared - shared % 128)
        #expect(borrowed.bits == (try alone(second)))
    }

    @Test("the configuration, the summary and the memory estimate count the recurrent blocks")
    func accounting() throws {
        let model = try hybrid("lfm2-b")
        let c = model.configuration
        #expect(c.attentionLayerCount == 1)
        #expect(c.recurrentLayerCount == 3)
        #expect(model.recurrentStateBytes == 3 * 2 * c.embeddingLength * 4)
        let summary = ModelSummary(model.gguf)
        #expect(summary.recurrentBlockCount == 3)
        #expect(summary.recurrentStateBytes == model.recurrentStateBytes)
        #expect(summary.kvCacheBytesPerPosition?["f16"] == c.kvWidth * 2 * 2)
        #expect(summary.text.contains("recurrent state:"))
        #expect(model.memoryEstimate(contextLength: 1024) > model.gguf.fileSize + c.kvWidth * 4 * 1024 + model.recurrentStateBytes)

        // Qwen3.5: per block, the convolution's window of 3 positions over the queries, keys and
        // values of 2 + 2 + 4 heads of 64, and four 64 × 64 matrices; the prediction block is left out.
        let qwen = try hybrid("qwen35-b")
        #expect(qwen.configuration.blockCount == 4)
        #expect(qwen.configuration.recurrentLayerCount == 3)
        let window = 3 * 8 * 64, matrices = 4 * 64 * 64
        #expect(qwen.recurrentStateBytes == 3 * (window + matrices) * 4)

        // Granite 4: per block, the window of 3 positions over x (2 × 256 values), B and C (64
        // each), and 8 heads' (64 × 64) scan states.
        let granite = try hybrid("granitehybrid-b")
        #expect(granite.configuration.recurrentLayerCount == 3)
        #expect(granite.recurrentStateBytes == 3 * (3 * (512 + 2 * 64) + 512 * 64) * 4)
    }
}
