import HearthFormats

/// How llama-quantize stores each tensor of a model under one of the file types people
/// download, for random-weight models of real size.
public enum QuantRecipe: String, CaseIterable, Sendable {
    case q4_0 = "Q4_0"
    case q4_K_M = "Q4_K_M"
    case q5_K_M = "Q5_K_M"
    case q8_0 = "Q8_0"
    case q2_K = "Q2_K"
    case q3_K_M = "Q3_K_M"
    case iq4_XS = "IQ4_XS"

    /// `general.file_type`: llama.cpp's number for the recipe.
    public var fileType: UInt32 {
        switch self {
        case .q4_0: 2
        case .q4_K_M: 15
        case .q5_K_M: 17
        case .q8_0: 7
        case .q2_K: 10
        case .q3_K_M: 12
        case .iq4_XS: 30
        }
    }

    /// The tensors the recipes tell apart.
    public enum Role: Sendable {
        case tokenEmbedding, output, attentionValue, attentionOutput, feedForwardDown, other
    }

    /// The recipe named `name`, in any case (`q4_k_m`, `Q4_K_M`).
    public init?(name: String) {
        guard let recipe = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else { return nil }
        self = recipe
    }

    /// The type of a tensor of `role` in block `layer` of `layers`, whose rows are `rowLength`
    /// long. The output projection (or the token embedding when it is the output too) takes
    /// Q6_K; Q4_K_M and Q5_K_M give the value projection and the feed-forward down projection Q6_K in the
    /// first and last eighths of the blocks and every third block between; a type whose blocks
    /// do not fit the rows falls back to one of 32-weight blocks. Q2_K gives the value projections
    /// Q4_K (Q3_K when fewer than 4 query heads share a key head) and the down and attention
    /// output projections Q3_K; Q3_K_M the first two value projections Q5_K and the others Q4_K,
    /// the first sixteenth of the down projections Q5_K and the others Q4_K, the attention
    /// output Q4_K; IQ4_XS the value projections Q5_K (when 4 or more query heads share a key
    /// head) and the first eighth of the down projections Q5_K.
    public func type(of role: Role, layer: Int, layers: Int, rowLength: Int, tiedOutput: Bool, groupedQuery: Int = 1) -> GGMLType {
        let base: GGMLType = switch self {
        case .q4_0: .q4_0
        case .q4_K_M: .q4_K
        case .q5_K_M: .q5_K
        case .q8_0: .q8_0
        case .q2_K: .q2_K
        case .q3_K_M: .q3_K
        case .iq4_XS: .iq4_xs
        }
        let moreBits = layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2
        var type = base
        switch role {
        case .output:
            type = base == .q8_0 ? .q8_0 : .q6_K
        case .tokenEmbedding:
            type = !tiedOutput || base == .q8_0 ? base : .q6_K
        case .attentionValue:
            switch self {
            case .q4_K_M, .q5_K_M: if moreBits { type = .q6_K }
            case .q2_K: type = groupedQuery >= 4 ? .q4_K : .q3_K
            case .q3_K_M: type = layer < 2 ? .q5_K : .q4_K
            case .iq4_XS: if groupedQuery >= 4 { type = .q5_K }
            default: break
            }
        case .feedForwardDown:
            switch self {
            case .q4_K_M, .q5_K_M: if moreBits { type = .q6_K }
            case .q2_K: type = .q3_K
            case .q3_K_M: type = layer < layers / 16 ? .q5_K : .q4_K
            case .iq4_XS: if layer < layers / 8 { type = .q5_K }
            default: break
            }
        case .attentionOutput:
            if self == .q2_K { type = .q3_K }
            if self == .q3_K_M { type = .q4_K }
        case .other:
            break
        }
        if rowLength % type.blockSize != 0 {
            let fallbacks: [GGMLType: GGMLType] = [.q4_K: .q5_0, .q5_K: .q5_1, .q6_K: .q8_0, .q2_K: .q4_0, .q3_K: .q4_0,
                                                   .iq4_xs: .iq4_nl]
            type = fallbacks[type] ?? type
        }
        return type
    }
}

extension TinyModel {
    /// Models of the shapes people run, with random weights (speed does not depend on their
    /// values) and the family's real tokenizer: Llama 3.2 1B and 3B, Llama 3.1 8B, Qwen3 4B,
    /// Gemma 3 1B and 4B, a mixture of experts of Qwen3-30B-A3B's shape, and the hybrids
    /// LFM2.5 1.2B (with Llama 3's vocabulary of 128256 tokens in place of its 65536) and Qwen3.5
    /// 2B and 4B (with Qwen 2.5's 151936 tokens in place of its 248320).
    public static let realShapeNames = ["llama-1b", "llama-3b", "llama-8b", "qwen3-4b", "gemma3-1b", "gemma3-4b", "qwen3moe-30b-a3b",
                                        "lfm2.5-1.2b", "qwen3.5-2b", "qwen3.5-4b"]

    /// The model of real shape `shape` (one of `realShapeNames`) in `recipe`; `blocks` keeps only
    /// that many of its blocks (a model that would not fit in memory).
    public static func realShape(_ shape: String, recipe: QuantRecipe, blocks: Int? = nil) -> TinyModel? {
        let llamaVocabulary = "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf"
        let qwenVocabulary = "llama-cpp-vocab/ggml-vocab-qwen2.gguf"
        let gemmaVocabulary = "gemma-3-270m-q4_k_m.gguf"
        var model: TinyModel
        switch shape {
        case "llama-1b":
            model = shaped("llama", llamaVocabulary, width: 2048, layers: 16, heads: 32, kvHeads: 8, headDimension: 64, feedForward: 8192)
        case "llama-3b":
            model = shaped("llama", llamaVocabulary, width: 3072, layers: 28, heads: 24, kvHeads: 8, headDimension: 128, feedForward: 8192)
        case "llama-8b":
            model = shaped("llama", llamaVocabulary, width: 4096, layers: 32, heads: 32, kvHeads: 8, headDimension: 128, feedForward: 14336)
            model.types.output = .q8_0  // an output projection of its own (its type is the recipe's)
        case "qwen3-4b":
            model = shaped("qwen3", qwenVocabulary, width: 2560, layers: 36, heads: 32, kvHeads: 8, headDimension: 128, feedForward: 9728)
        case "gemma3-1b":
            model = shaped("gemma3", gemmaVocabulary, width: 1152, layers: 26, heads: 4, kvHeads: 1, headDimension: 256, feedForward: 6912)
            model.extraMetadata = [("attention.sliding_window", .uint32(512))]
        case "gemma3-4b":
            model = shaped("gemma3", gemmaVocabulary, width: 2560, layers: 34, heads: 8, kvHeads: 4, headDimension: 256, feedForward: 10240)
            model.extraMetadata = [("attention.sliding_window", .uint32(1024))]
        case "qwen3moe-30b-a3b":
            model = shaped("qwen3moe", qwenVocabulary, width: 2048, layers: 48, heads: 32, kvHeads: 4, headDimension: 128, feedForward: 6144)
            model.experts = 128
            model.expertsUsed = 8
            model.expertFeedForward = 768
            model.types.output = .q8_0  // an output projection of its own (its type is the recipe's)
        case "lfm2.5-1.2b":
            model = shaped("lfm2", llamaVocabulary, width: 2048, layers: 16, heads: 32, kvHeads: 8, headDimension: 64, feedForward: 8192)
            model.convolutionBlocks = [0, 1, 3, 4, 6, 7, 9, 11, 13, 15]
            model.outputNorm = "token_embd_norm.weight"
        case "qwen3.5-2b":
            model = shaped("qwen35", "llama-cpp-vocab/ggml-vocab-qwen35.gguf", width: 2048, layers: 24, heads: 8, kvHeads: 2,
                           headDimension: 256, feedForward: 6144)
            model.deltaNet = (stateSize: 128, keyHeads: 16, valueHeads: 16)
        case "qwen3.5-4b":
            model = shaped("qwen35", "llama-cpp-vocab/ggml-vocab-qwen35.gguf", width: 2560, layers: 32, heads: 16, kvHeads: 4,
                           headDimension: 256, feedForward: 9216)
            model.deltaNet = (stateSize: 128, keyHeads: 16, valueHeads: 32)
        default:
            return nil
        }
        switch model.architecture {
        case "llama":
            model.ropeBase = 500_000
            model.contextLength = 131_072
            model.globalTensors = [("rope_freqs.weight", [model.headDimension / 2], .f32)]
        case "qwen3", "qwen3moe":
            model.ropeBase = 1_000_000
            model.contextLength = 40_960
            model.headNorms = true
        case "lfm2":
            model.ropeBase = 1_000_000
            model.contextLength = 128_000
            model.headNorms = true
        case "qwen35":
            // Gated queries, a quarter of each head turned by RoPE in sections of 11, 11 and 10 pairs.
            model.ropeBase = 10_000_000
            model.contextLength = 262_144
            model.headNorms = true
            model.gatedQueries = true
            model.feedForwardNorm = "post_attention_norm.weight"
            model.ropeDimensions = model.headDimension / 4
            model.extraMetadata = [("rope.dimension_sections", .array([11, 11, 10, 0].map { .int32($0) }))]
        default:
            model.ropeBase = 1_000_000
            model.contextLength = 32_768
            model.headNorms = true
            model.postNorms = true
        }
        if let blocks { model.layers = min(model.layers, max(1, blocks)) }
        model.name = "\(shape)\(blocks.map { "-\($0)blocks" } ?? "")-\(recipe.rawValue)"
        model.recipe = recipe
        return model
    }

    private static func shaped(_ architecture: String, _ vocabulary: String, width: Int, layers: Int, heads: Int, kvHeads: Int,
                               headDimension: Int, feedForward: Int) -> TinyModel {
        var model = TinyModel(name: architecture, architecture: architecture, vocabulary: vocabulary)
        model.width = width
        model.layers = layers
        model.heads = heads
        model.kvHeads = kvHeads
        model.headDimension = headDimension
        model.feedForward = feedForward
        model.types.output = nil
        return model
    }
}
