extension TinyModel {
    /// The tiny models the architecture tests run, two or more per family: a small one in the
    /// 32-element formats, and one with 256-wide rows in F16 and the K-quant formats.
    public static let catalog: [TinyModel] = [
        llama("llama-spm-a", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-spm.gguf"),
        llama("llama-spm-b", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-spm.gguf", kQuants: true),
        // Llama 3.x: the llama-bpe vocabulary and per-frequency RoPE factors.
        llama("llama3-a", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", ropeFactors: true),
        llama("llama3-b", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true, ropeFactors: true),
        // The low-bit formats of the dynamic quantizations: Q2_K, Q3_K, IQ4_NL and IQ4_XS.
        llama("llama3-lowbit", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true, ropeFactors: true,
              types: Types(embedding: .q3_K, attention: .iq4_nl, feedForward: .q2_K, down: .iq4_xs, output: .q3_K)),
        // The grid formats of the IQ1, IQ2 and IQ3 quantizations, each in one model's products.
        llama("llama3-iq23", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true, ropeFactors: true,
              types: Types(embedding: .iq3_xxs, attention: .iq2_xxs, feedForward: .iq2_xs, down: .iq3_s, output: .iq2_s)),
        llama("llama3-iq1", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true, ropeFactors: true,
              types: Types(embedding: .iq2_s, attention: .iq1_m, feedForward: .iq1_s, down: .iq3_xxs, output: .iq3_s)),
        qwen("qwen2-a", "qwen2"),
        qwen("qwen2-b", "qwen2", kQuants: true),
        qwen("qwen3-a", "qwen3"),
        qwen("qwen3-b", "qwen3", kQuants: true),
        // Qwen3 with YaRN RoPE scaling (factor 4 over a trained context of 256 positions).
        qwen("qwen3-yarn", "qwen3", yarn: true),
        qwen("qwen3moe-a", "qwen3moe"),
        qwen("qwen3moe-b", "qwen3moe", kQuants: true),
        // Experts in MXFP4, as gpt-oss ships them.
        qwen("qwen3moe-mxfp4", "qwen3moe", kQuants: true,
             types: Types(embedding: .q8_0, attention: .q8_0, feedForward: .mxfp4, down: .mxfp4, output: .q8_0)),
        phi3("phi3-a", longContext: false),
        phi3("phi3-b", longContext: true, kQuants: true),
        gemma2("gemma2-a"),
        gemma2("gemma2-b", kQuants: true),
        smollm3("smollm3-a"),
        // Ministral 3: YaRN with its betas and log multiplier, and the attention temperature
        // (floor of 16 positions, so that the prompts cross several steps).
        mistral3("mistral3-a"),
        // LFM2: gated short convolutions in three blocks of four, attention in the third.
        lfm2("lfm2-a"),
        lfm2("lfm2-b", kQuants: true),
        // LFM2 with its attention over a sliding window short enough for the prompts to cross.
        lfm2("lfm2-swa", slidingWindow: 16),
        // LFM2 MoE: a dense first block, then four experts chosen by sigmoid plus a bias.
        lfm2("lfm2moe-a", architecture: "lfm2moe"),
        // Qwen3.5: gated DeltaNet in three blocks of four, gated full attention in the fourth, a
        // multi-token-prediction block after them.
        qwen35("qwen35-a"),
        qwen35("qwen35-b", kQuants: true),
        // Qwen3.5 MoE: four routed experts (two used) beside a gated shared expert.
        qwen35("qwen35moe-a", architecture: "qwen35moe"),
        // gpt-oss: MXFP4 experts with biases, sinks, a sliding window the prompts cross in the
        // even blocks, and YaRN.
        gptOss("gptoss-a"),
        // Granite 4: Mamba-2 in three blocks of four, attention without positions in the third
        // (as Granite 4.0-H has it), and Granite's four multipliers.
        granite("granitehybrid-a"),
        // The same with RoPE, 64-value scan states in one group, in F16 and the K-quant formats.
        granite("granitehybrid-b", kQuants: true),
        // Granite 3.x and Granite 4.0's dense models: attention in every block, the same
        // multipliers.
        granite("granite-a", architecture: "granite"),
        granite("granite-b", architecture: "granite", kQuants: true),
        // Gemma 4 as E2B and E4B are made: global attention in every third block with heads of
        // twice the sliding ones' size and a quarter of their pairs turning, the last three
        // blocks reading the keys and values of earlier ones with twice as wide feed-forward
        // networks, and a per-layer embedding.
        gemma4("gemma4-a"),
        // Gemma 4 as 31B is made: no per-layer embedding or shared keys and values, global
        // blocks with fewer key/value heads and their keys as values; F16 and K-quants.
        gemma4("gemma4-b", kQuants: true),
    ]

    /// Held-back copies of every family's 256-wide model, written with other seeds (other names)
    /// in three mixes — F16 attention with Q8_0 elsewhere, llama-quantize's Q4_K_M recipe, and
    /// IQ4_XS with Q6_K feed-forward down projections — for comparison with llama.cpp built for
    /// AVX2, the arithmetic Hearth follows.
    public static let heldBack: [TinyModel] = {
        let families = catalog.filter { $0.name.hasSuffix("-b") } + [smollm3("smollm3-b", kQuants: true)]
        return families.flatMap { family -> [TinyModel] in
            let stem = family.name.dropLast(2)
            var f16 = family, q4km = family, iq4xs = family
            f16.name = "\(stem)-avx2-f16"
            f16.types = Types(embedding: .q8_0, attention: .f16, feedForward: .q8_0, down: .q8_0,
                              output: family.types.output == nil ? nil : .q8_0)
            q4km.name = "\(stem)-avx2-q4km"
            q4km.recipe = .q4_K_M
            iq4xs.name = "\(stem)-avx2-iq4xs"
            iq4xs.types = Types(embedding: .iq4_xs, attention: .iq4_xs, feedForward: .iq4_xs, down: .q6_K,
                                output: family.types.output == nil ? nil : .q6_K)
            return [f16, q4km, iq4xs]
        }
    }()

    private static func base(_ name: String, _ architecture: String, vocabulary: String, kQuants: Bool) -> TinyModel {
        var model = TinyModel(name: name, architecture: architecture, vocabulary: vocabulary)
        if kQuants {
            model.width = 256
            model.heads = 4
            model.kvHeads = 1
            model.headDimension = 64
            model.feedForward = 512
            model.types = Types(embedding: .q6_K, attention: .f16, feedForward: .q4_K, down: .q6_K, output: .q5_K)
        } else {
            model.types = Types(embedding: .q8_0, attention: .q8_0, feedForward: .q4_0, down: .q5_0, output: nil)
        }
        return model
    }

    private static func qwen(_ name: String, _ architecture: String, kQuants: Bool = false, yarn: Bool = false,
                             types: Types? = nil) -> TinyModel {
        var model = base(name, architecture, vocabulary: "llama-cpp-vocab/ggml-vocab-qwen2.gguf", kQuants: kQuants)
        if let types { model.types = types }
        model.ropeBase = 1_000_000
        if yarn {
            model.extraMetadata = [("rope.scaling.type", .string("yarn")), ("rope.scaling.factor", .float32(4)),
                                   ("rope.scaling.original_context_length", .uint32(256))]
        }
        model.attentionBiases = architecture == "qwen2"
        model.headNorms = architecture != "qwen2"
        if architecture == "qwen3moe" {
            model.experts = 4
            model.expertsUsed = 2
            model.expertFeedForward = kQuants ? 256 : 128
        }
        return model
    }

    /// Phi-3 with LongRoPE factors; `longContext` makes the trained context (512) shorter than
    /// the 1024 positions the fixtures run with, so the long factors apply.
    private static func phi3(_ name: String, longContext: Bool, kQuants: Bool = false) -> TinyModel {
        var model = base(name, "phi3", vocabulary: "llama-cpp-vocab/ggml-vocab-phi-3.gguf", kQuants: kQuants)
        model.fused = true
        model.kvHeads = model.heads
        model.extraMetadata = [("rope.scaling.original_context_length", .uint32(longContext ? 512 : 4096)),
                               ("rope.scaling.attn_factor", .float32(1.1902381))]
        model.globalTensors = [("rope_factors_long.weight", [model.headDimension / 2], .f32),
                               ("rope_factors_short.weight", [model.headDimension / 2], .f32)]
        return model
    }

    /// Gemma 2 with Gemma 3's tokenizer, a sliding window short enough for the prompts to
    /// cross, and both soft caps.
    private static func gemma2(_ name: String, kQuants: Bool = false) -> TinyModel {
        var model = base(name, "gemma2", vocabulary: "gemma-3-270m-q4_k_m.gguf", kQuants: kQuants)
        model.postNorms = true
        model.types.output = nil
        model.extraMetadata = [("attention.sliding_window", .uint32(16)), ("attn_logit_softcapping", .float32(50)),
                               ("final_logit_softcapping", .float32(30))]
        return model
    }

    private static func gemma4(_ name: String, kQuants: Bool = false) -> TinyModel {
        var model = base(name, "gemma4", vocabulary: "llama-cpp-vocab/ggml-vocab-gemma-4.gguf", kQuants: kQuants)
        model.layers = 6
        model.postNorms = true
        model.headNorms = true
        // Its own output matrix: tied to embeddings this strong, the head repeats the last token.
        if !kQuants { model.types.output = .q8_0 }
        model.ropeBase = 1_000_000
        model.extraMetadata = [("attention.sliding_window", .uint32(16)), ("final_logit_softcapping", .float32(30)),
                               ("rope.freq_base_swa", .float32(10_000))]
        let sliding = [true, true, false, true, true, false]
        if kQuants {
            // Sliding heads of 64 (two key/value heads), global ones of 128 (one).
            var layout = TinyModel.Gemma4Layout(sliding: sliding, slidingHeadDimension: 64, slidingKVHeads: 2, rotatedGlobalPairs: 16)
            layout.keysAsValues = true
            model.headDimension = 128
            model.kvHeads = 1
            model.gemma4 = layout
        } else {
            var layout = TinyModel.Gemma4Layout(sliding: sliding, slidingHeadDimension: 32, slidingKVHeads: 1, rotatedGlobalPairs: 8)
            layout.sharedKVLayers = 3
            layout.perLayerWidth = 32
            layout.feedForwardWidths = [256, 256, 256, 512, 512, 512]
            model.headDimension = 64
            model.kvHeads = 1
            model.gemma4 = layout
        }
        return model
    }

    private static func mistral3(_ name: String) -> TinyModel {
        var model = base(name, "mistral3", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true)
        model.ropeBase = 1_000_000
        model.extraMetadata = [("rope.scaling.type", .string("yarn")), ("rope.scaling.factor", .float32(4)),
                               ("rope.scaling.original_context_length", .uint32(16)),
                               ("rope.scaling.yarn_beta_fast", .float32(16)), ("rope.scaling.yarn_beta_slow", .float32(2)),
                               ("rope.scaling.yarn_log_multiplier", .float32(0.5)),
                               ("attention.temperature_scale", .float32(0.1))]
        return model
    }

    private static func lfm2(_ name: String, architecture: String = "lfm2", kQuants: Bool = false, slidingWindow: Int? = nil) -> TinyModel {
        var model = base(name, architecture, vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: kQuants)
        if architecture == "lfm2moe" {
            model.experts = 4
            model.expertsUsed = 2
            model.expertFeedForward = 128
            model.denseLeadBlocks = 1
            model.sigmoidExperts = true
        }
        if let slidingWindow { model.extraMetadata = [("attention.sliding_window", .uint32(UInt32(slidingWindow)))] }
        model.layers = 4
        model.convolutionBlocks = [0, 1, 3]
        model.headNorms = true
        model.ropeBase = 1_000_000
        model.outputNorm = "token_embd_norm.weight"
        return model
    }

    private static func qwen35(_ name: String, architecture: String = "qwen35", kQuants: Bool = false) -> TinyModel {
        var model = base(name, architecture, vocabulary: "llama-cpp-vocab/ggml-vocab-qwen35.gguf", kQuants: kQuants)
        model.layers = 4
        if architecture == "qwen35moe" {
            model.experts = 4
            model.expertsUsed = 2
            model.expertFeedForward = 128
            model.sharedExpertFeedForward = 256
        } else {
            model.predictionBlocks = 1
        }
        model.headNorms = true
        model.gatedQueries = true
        model.feedForwardNorm = "post_attention_norm.weight"
        model.ropeBase = 10_000_000
        model.deltaNet = (stateSize: model.headDimension, keyHeads: 2, valueHeads: 4)
        // RoPE on the first half of each head, in three interleaved sections that cover every
        // pair (as Qwen3.5's 11, 11, 10 of 32 do).
        let pairs = model.headDimension / 4, first = (pairs + 2) / 3, second = (pairs + 1) / 3
        model.extraMetadata = [("rope.dimension_sections", .array([first, second, pairs - first - second, 0].map { .int32(Int32($0)) }))]
        model.ropeDimensions = model.headDimension / 2
        return model
    }

    private static func gptOss(_ name: String) -> TinyModel {
        var model = base(name, "gpt-oss", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: false)
        model.layers = 4
        model.attentionBiases = true
        model.sinksAndBiases = true
        model.experts = 4
        model.expertsUsed = 2
        model.expertFeedForward = 128
        model.types = Types(embedding: .q8_0, attention: .q8_0, feedForward: .mxfp4, down: .mxfp4, output: .q8_0)
        model.feedForwardNorm = "post_attention_norm.weight"
        model.ropeBase = 150_000
        model.extraMetadata = [("attention.sliding_window", .uint32(16)), ("rope.scaling.type", .string("yarn")),
                               ("rope.scaling.factor", .float32(8)), ("rope.scaling.original_context_length", .uint32(256))]
        return model
    }

    private static func granite(_ name: String, architecture: String = "granitehybrid", kQuants: Bool = false) -> TinyModel {
        var model = base(name, architecture, vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: kQuants)
        model.extraMetadata = [("embedding_scale", .float32(4)), ("residual_scale", .float32(0.5)),
                               ("attention.scale", .float32(0.125)), ("logit_scale", .float32(2))]
        guard architecture == "granitehybrid" else {
            if !kQuants { model.types.output = .q8_0 }
            return model
        }
        model.layers = 4
        model.convolutionBlocks = [0, 1, 3]
        model.mamba2 = kQuants ? (stateSize: 64, heads: 8, groups: 1) : (stateSize: 32, heads: 8, groups: 2)
        if !kQuants {
            model.extraMetadata.append(("rope.scaling.finetuned", .bool(false)))
            // Its own output matrix: tied to embeddings this strong, the head repeats the last token.
            model.types.output = .q8_0
        }
        return model
    }

    /// SmolLM3 with Llama 3's tokenizer and five blocks, the fourth without RoPE.
    private static func smollm3(_ name: String, kQuants: Bool = false) -> TinyModel {
        var model = base(name, "smollm3", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: kQuants)
        model.layers = 5
        model.ropeBase = 5_000_000
        return model
    }

    private static func llama(_ name: String, vocabulary: String, kQuants: Bool = false, ropeFactors: Bool = false,
                              types: Types? = nil) -> TinyModel {
        var model = base(name, "llama", vocabulary: vocabulary, kQuants: kQuants)
        if let types { model.types = types }
        model.ropeBase = 500_000
        if ropeFactors { model.globalTensors.append(("rope_freqs.weight", [model.headDimension / 2], .f32)) }
        return model
    }
}
