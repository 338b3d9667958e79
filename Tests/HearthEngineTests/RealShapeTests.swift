import Foundation
import Hearth
import HearthTestSupport
import Testing

/// The random-weight models of real shapes that scripts/bench-sizes measures.
@Suite("Models of real shapes for measuring")
struct RealShapeTests {
    /// llama-quantize's choices for a 16-block model: Q6_K for the value and down projections of
    /// blocks 0, 1, 4, 7, 10, 13, 14 and 15 under Q4_K_M, the output in Q6_K (Q8_0 under Q8_0),
    /// and 32-weight blocks where a type's 256-weight blocks do not fit a row.
    @Test func recipesChooseTypesAsLlamaQuantizeDoes() {
        let moreBits = (0..<16).filter { QuantRecipe.q4_K_M.type(of: .feedForwardDown, layer: $0, layers: 16, rowLength: 8192, tiedOutput: true) == .q6_K }
        #expect(moreBits == [0, 1, 4, 7, 10, 13, 14, 15])
        #expect((0..<16).filter { QuantRecipe.q4_K_M.type(of: .attentionValue, layer: $0, layers: 16, rowLength: 2048, tiedOutput: true) == .q6_K } == moreBits)
        #expect(QuantRecipe.q4_K_M.type(of: .other, layer: 4, layers: 16, rowLength: 2048, tiedOutput: true) == .q4_K)
        #expect(QuantRecipe.q4_0.type(of: .feedForwardDown, layer: 0, layers: 16, rowLength: 8192, tiedOutput: true) == .q4_0)
        for recipe in [QuantRecipe.q4_0, .q4_K_M] {
            #expect(recipe.type(of: .output, layer: 0, layers: 16, rowLength: 4096, tiedOutput: false) == .q6_K)
            #expect(recipe.type(of: .tokenEmbedding, layer: 0, layers: 16, rowLength: 2048, tiedOutput: true) == .q6_K)
            // Gemma 3 1B's rows of 1152 weights.
            #expect(recipe.type(of: .tokenEmbedding, layer: 0, layers: 26, rowLength: 1152, tiedOutput: true) == .q8_0)
        }
        #expect(QuantRecipe.q4_0.type(of: .tokenEmbedding, layer: 0, layers: 32, rowLength: 4096, tiedOutput: false) == .q4_0)
        #expect(QuantRecipe.q4_K_M.type(of: .tokenEmbedding, layer: 0, layers: 32, rowLength: 4096, tiedOutput: false) == .q4_K)
        #expect(QuantRecipe.q4_K_M.type(of: .other, layer: 3, layers: 26, rowLength: 1152, tiedOutput: true) == .q5_0)
        #expect(QuantRecipe.q8_0.type(of: .output, layer: 0, layers: 32, rowLength: 4096, tiedOutput: false) == .q8_0)
        #expect(QuantRecipe.q5_K_M.type(of: .other, layer: 4, layers: 16, rowLength: 2048, tiedOutput: true) == .q5_K)
        #expect(QuantRecipe.q5_K_M.type(of: .feedForwardDown, layer: 1, layers: 16, rowLength: 8192, tiedOutput: true) == .q6_K)
        #expect(QuantRecipe.q5_K_M.type(of: .feedForwardDown, layer: 2, layers: 16, rowLength: 8192, tiedOutput: true) == .q5_K)
        #expect(QuantRecipe.q5_K_M.type(of: .other, layer: 3, layers: 26, rowLength: 1152, tiedOutput: true) == .q5_1)
        #expect(QuantRecipe.q5_K_M.fileType == 17)
        // The low-bit recipes, as llama-quantize writes Llama 3.2 1B's shape (32 query heads over 8
        // key heads; 16 blocks): per-type tensor counts equal to its files'.
        #expect(QuantRecipe.q2_K.type(of: .attentionValue, layer: 5, layers: 16, rowLength: 2048, tiedOutput: true, groupedQuery: 4) == .q4_K)
        #expect(QuantRecipe.q2_K.type(of: .attentionValue, layer: 5, layers: 28, rowLength: 3072, tiedOutput: true, groupedQuery: 3) == .q3_K)
        #expect(QuantRecipe.q2_K.type(of: .feedForwardDown, layer: 5, layers: 16, rowLength: 8192, tiedOutput: true) == .q3_K)
        #expect(QuantRecipe.q2_K.type(of: .attentionOutput, layer: 5, layers: 16, rowLength: 2048, tiedOutput: true) == .q3_K)
        #expect(QuantRecipe.q2_K.type(of: .other, layer: 5, layers: 16, rowLength: 2048, tiedOutput: true) == .q2_K)
        #expect((0..<16).map { QuantRecipe.q3_K_M.type(of: .attentionValue, layer: $0, layers: 16, rowLength: 2048, tiedOutput: true) }
                    == [.q5_K, .q5_K] + Array(repeating: .q4_K, count: 14))
        #expect((0..<32).filter { QuantRecipe.q3_K_M.type(of: .feedForwardDown, layer: $0, layers: 32, rowLength: 14336, tiedOutput: false) == .q5_K } == [0, 1])
        #expect(QuantRecipe.q3_K_M.type(of: .attentionOutput, layer: 9, layers: 16, rowLength: 2048, tiedOutput: true) == .q4_K)
        #expect((0..<16).filter { QuantRecipe.iq4_XS.type(of: .feedForwardDown, layer: $0, layers: 16, rowLength: 8192, tiedOutput: true) == .q5_K } == [0, 1])
        #expect(QuantRecipe.iq4_XS.type(of: .attentionValue, layer: 3, layers: 16, rowLength: 2048, tiedOutput: true, groupedQuery: 4) == .q5_K)
        #expect(QuantRecipe.iq4_XS.type(of: .attentionValue, layer: 3, layers: 34, rowLength: 2560, tiedOutput: true, groupedQuery: 2) == .iq4_xs)
        #expect(QuantRecipe.iq4_XS.type(of: .other, layer: 3, layers: 26, rowLength: 1152, tiedOutput: true) == .iq4_nl)
        #expect(QuantRecipe.iq4_XS.type(of: .output, layer: 0, layers: 16, rowLength: 2048, tiedOutput: true) == .q6_K)
        #expect(QuantRecipe(name: "iq4_xs") == .iq4_XS && QuantRecipe.q3_K_M.fileType == 12)
        #expect(QuantRecipe(name: "q4_k_m") == .q4_K_M)
        #expect(QuantRecipe(name: "Q5_K_S") == nil)
        #expect(TinyModel.realShape("llama-70b", recipe: .q4_0) == nil)
    }

    /// One block of Llama 3.2 1B's shape, written piece by piece, is the shape it says, holds
    /// the recipe's types, and runs.
    @Test func aBlockOfLlama1BShapeRuns() throws {
        let directory = try TemporaryDirectory()
        let spec = try #require(TinyModel.realShape("llama-1b", recipe: .q4_K_M, blocks: 1))
        let path = try spec.write(in: directory.url)
        #expect(path.hasSuffix("llama-1b-1blocks-Q4_K_M.gguf"))
        let model = try TransformerModel(path: path, threads: 2)
        let c = model.configuration
        let shape: [Int] = [c.embeddingLength, c.blockCount, c.headCount, c.kvHeadCount, c.feedForwardLength, c.vocabularySize]
        #expect(shape == [2048, 1, 32, 8, 8192, 128_256])
        #expect(ModelSummary(model.gguf).fileType == "Q4_K_M")
        let types = Dictionary(uniqueKeysWithValues: model.gguf.tensors.map { ($0.name, $0.type) })
        #expect(types["token_embd.weight"] == .q6_K)
        #expect(types["output.weight"] == nil)
        #expect(types["blk.0.attn_q.weight"] == .q4_K)
        #expect(types["blk.0.attn_v.weight"] == .q6_K)
        #expect(types["blk.0.ffn_down.weight"] == .q6_K)
        #expect(types["blk.0.ffn_up.weight"] == .q4_K)
        #expect(types["rope_freqs.weight"] == .f32)
        let sequence = try model.makeSequence(contextLength: 16)
        let logits = try model.evaluate(model.tokenizer.encode("Hello there", addSpecial: true, parseSpecial: false), sequence: sequence)
        let finite = logits.allSatisfy { $0.isFinite }
        #expect(finite)
        // Pieces are seeded by the tensor's name: the same model is written again byte for byte.
        let again = try TemporaryDirectory()
        #expect(try Data(contentsOf: URL(fileURLWithPath: spec.write(in: again.url))) == Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
