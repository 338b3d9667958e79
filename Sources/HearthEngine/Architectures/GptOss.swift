import HearthCore
import HearthFormats

/// gpt-oss (OpenAI's open-weight 20B and 120B; llama.cpp's `gpt-oss`): pre-norm blocks whose
/// attention has biases, a learned sink per query head and RoPE on NeoX halves with YaRN, over
/// a sliding window (`attention.sliding_window`, 128) in the even blocks and the whole context
/// in the odd ones; then, after `post_attention_norm`, a mixture of experts whose router has a
/// bias, whose experts are chosen by their raw scores and weighted by a softmax over the chosen
/// ones, and whose experts (with biases) use gpt-oss's clamped SwiGLU.
final class GptOss: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        guard var experts = try MixtureOfExperts.Shape.read(gguf, configuration: c) else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(c.architecture).expert_count is missing or 0")
        }
        experts.gating = .softmaxWeight
        experts.normalize = false
        experts.activation = .swigluOAI
        // Every other block slides unless the file says otherwise: a period, or each block's flag.
        let patternKey = "\(c.architecture).attention.sliding_window_pattern"
        let flags = gguf.array(patternKey)?.compactMap(\.boolValue)
        let pattern = gguf.int(patternKey) ?? 2
        if let flags, flags.count < c.blockCount {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(patternKey) flags fewer than the \(c.blockCount) blocks")
        }
        let global = try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, factors: nil)
        let local = try gguf.float("\(c.architecture).rope.freq_base_swa").map {
            try RotaryEmbedding.read(gguf, configuration: c, pairing: .halves, base: $0, factors: nil)
        } ?? global
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.stack(gguf, configuration: c, feedForwardNorm: "post_attention_norm") { i in
            let sliding = flags.map { $0[i] } ?? (pattern == 0 || i % pattern < pattern - 1)
            return (try Attention(gguf, layer: i, configuration: c, rope: sliding ? local : global,
                                  window: sliding ? c.slidingWindow : nil,
                                  scale: .standard(c)),
                    try experts.layer(gguf, i, configuration: c))
        }
        head = try OutputHead(gguf, configuration: c)
    }
}
