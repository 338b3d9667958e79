import HearthFormats

extension TinyModel {
    /// The tiny models the architecture tests run, two or more per family: a small one in the
    /// 32-element formats, and one with 256-wide rows in F16 and the K-quant formats.
    public static let catalog: [TinyModel] = [
        llama("llama-spm-a", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-spm.gguf"),
        llama("llama-spm-b", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-spm.gguf", kQuants: true),
        // Llama 3.x: the llama-bpe vocabulary and per-frequency RoPE factors.
        llama("llama3-a", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", ropeFactors: true),
        llama("llama3-b", vocabulary: "llama-cpp-vocab/ggml-vocab-llama-bpe.gguf", kQuants: true, ropeFactors: true),
    ]

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

    private static func llama(_ name: String, vocabulary: String, kQuants: Bool = false, ropeFactors: Bool = false) -> TinyModel {
        var model = base(name, "llama", vocabulary: vocabulary, kQuants: kQuants)
        model.ropeBase = 500_000
        if ropeFactors { model.globalTensors.append(("rope_freqs.weight", [model.headDimension / 2], .f32)) }
        return model
    }
}
