import Foundation
import Hearth
import HearthTestSupport
import Testing

extension TinyLlama {
    func load(threads: Int = 2) throws -> TransformerModel {
        let path = try write()
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try TransformerModel(path: path, threads: threads)
    }
}

@Suite struct TinyModelTests {
    @Test func aTinyRandomModelLoadsAndRuns() throws {
        let model = try TinyLlama().load()
        let state = try model.makeSequence(contextLength: 64)
        let logits = try model.evaluate([1, 2, 3, 4, 5], sequence: state)
        #expect(logits.count == 16)
        #expect(logits.allSatisfy { $0.isFinite })
    }

    @Test("hostile or unsupported metadata is a HearthError, never a crash", arguments: [
        ("head size above the kernels' limit", [("llama.attention.key_length", GGUFValue.uint32(1024))]),
        ("head size 2^62", [("llama.attention.key_length", .uint64(1 << 62))]),
        ("zero context", [("llama.context_length", .uint32(0))]),
        ("context 2^50", [("llama.context_length", .uint64(1 << 50))]),
        ("no key/value heads", [("llama.attention.head_count_kv", .uint32(0))]),
        ("heads that do not group", [("llama.attention.head_count_kv", .uint32(3))]),
        ("mixture of experts", [("llama.expert_count", .uint32(8))]),
        ("unknown RoPE scaling", [("llama.rope.scaling.type", .string("longrope"))]),
        ("NaN epsilon", [("llama.attention.layer_norm_rms_epsilon", .float32(.nan))]),
        ("unknown architecture", [("general.architecture", .string("mamba"))]),
        ("unknown pre-tokenizer", [("tokenizer.ggml.pre", .string("nonesuch"))]),
    ] as [(String, [(String, GGUFValue)])])
    func hostileMetadata(_ name: String, _ overrides: [(String, GGUFValue)]) throws {
        var tiny = TinyLlama()
        tiny.overrides = overrides
        #expect(throws: HearthError.self, "\(name)") { try tiny.load() }
    }

    @Test("Granite 4 files with what the engine does not run are refused by name: experts, feed-forward biases")
    func graniteRefusals() throws {
        let folder = try TemporaryDirectory()
        var experts = try #require(TinyModel.catalog.first { $0.name == "granitehybrid-a" })
        experts.extraMetadata.append(("expert_count", .uint32(4)))
        var biases = try #require(TinyModel.catalog.first { $0.name == "granitehybrid-a" })
        biases.blockTensors = [("ffn_up.bias", [biases.feedForward], .f32)]
        for (spec, words) in [(experts, "mixture-of-experts granitehybrid"), (biases, "granitehybrid models with feed-forward biases")] {
            let path = try spec.write(in: folder.url)
            let error = #expect(throws: HearthError.self) { try TransformerModel(path: path, threads: 1) }
            #expect(error?.category == .model && "\(error!)".contains(words), "\(String(describing: error))")
        }
    }

    @Test func ropeFrequencyFactorsOfTheWrongSizeAreAnError() throws {
        var tiny = TinyLlama()
        tiny.extraTensors = [("rope_freqs.weight", [8])]
        #expect(try tiny.load().configuration.ropeDimensions == 16)
        tiny.extraTensors = [("rope_freqs.weight", [5])]
        let error = #expect(throws: HearthError.self) { try tiny.load() }
        #expect(error?.category == .model)
    }

    @Test func aStateBelongsToTheModelThatMadeIt() throws {
        let one = try TinyLlama().load(threads: 1)
        let two = try TinyLlama().load(threads: 2)
        let state = try one.makeSequence(contextLength: 16)
        #expect(throws: HearthError.self) { try two.evaluate([1], sequence: state) }
    }

    @Test("a prompt split over several batches gives exactly the logits of one batch")
    func batchesSplitExactly() throws {
        let model = try TransformerModel(path: TestFiles.model(TestFiles.smolLM2), threads: 2)
        let prompt = model.tokenizer.encode(
            "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness",
            addSpecial: true, parseSpecial: false)
        #expect(prompt.count > 17 && prompt.count % 8 > 1)
        let whole = Array(try model.evaluate(prompt, sequence: model.makeSequence(contextLength: 64)))
        let split = Array(try model.evaluate(prompt, sequence: model.makeSequence(contextLength: 64, chunkSize: 8)))
        #expect(whole == split)
    }
}
