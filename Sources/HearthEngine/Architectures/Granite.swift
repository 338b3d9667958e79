import HearthCore
import HearthFormats

/// Granite 4 (`granitehybrid`: Granite 4.0-H Micro, Tiny and Small) and the dense Granite
/// (`granite`: Granite 3.x, Granite 4.0 Micro): pre-norm blocks whose first half is either
/// Mamba-2 (the hybrid's blocks with no key/value heads in `attention.head_count_kv`) or
/// grouped-query attention, RoPE on adjacent pairs unless the file
/// says `rope.scaling.finetuned` false (Granite 4.0-H has no positions there); then a SwiGLU
/// feed-forward network. Granite's multipliers: token embeddings times `embedding_scale`, each
/// block output times `residual_scale` before it joins the residual stream, attention scores
/// times `attention.scale`, logits divided by `logit_scale`.
final class Granite: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let a = c.architecture
        try MixtureOfExperts.refuse(gguf, configuration: c)
        try FeedForward.refuseBiases(gguf, configuration: c)
        // Granite Vision adds the image projector's streams into later blocks.
        if let mapping = gguf.array("\(a).deepstack_mapping")?.compactMap(\.intValue), mapping.dropFirst().contains(where: { $0 >= 0 }) {
            throw HearthError.unsupportedModel(reason: "\(a) models with deepstack layers (Granite Vision)")
        }
        func multiplier(_ key: String) throws -> Float? {
            guard let value = gguf.float("\(a).\(key)"), value != 0 else { return nil }
            guard value.isFinite else { throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).\(key) is \(value)") }
            return value
        }
        let rotates = gguf.bool("\(a).rope.scaling.finetuned") ?? true
        let rope = rotates ? try RotaryEmbedding.read(gguf, configuration: c, pairing: .adjacent, factors: "rope_freqs.weight") : nil
        let scale = try multiplier("attention.scale").map(Attention.Scale.scores) ?? .standard(c)
        embedding = try TokenEmbedding(gguf, configuration: c, scale: try multiplier("embedding_scale"))
        blocks = try PreNormBlock.hybrid(gguf, configuration: c, residualScale: try multiplier("residual_scale"),
                                         recurrent: { try Mamba2(gguf, layer: $0, configuration: c) },
                                         attention: { try Attention(gguf, layer: $0, configuration: c, rope: rope, scale: scale) })
        head = try OutputHead(gguf, configuration: c, divisor: try multiplier("logit_scale"))
    }
}
