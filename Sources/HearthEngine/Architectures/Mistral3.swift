import HearthCore
import HearthFormats

/// Ministral 3 and Mistral Small 3.x (`mistral3`): Llama's blocks, with YaRN RoPE where the file
/// says so (its beta and log-multiplier keys included) and, when the file sets
/// `attention.temperature_scale`, queries scaled up with the position after their rotation
/// (floored in steps of the original context length), as llama.cpp's `mistral3` runs it.
final class Mistral3: StackedDecoder {
    let embedding: TokenEmbedding
    let blocks: [PreNormBlock]
    let head: OutputHead

    init(gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        let a = c.architecture
        try MixtureOfExperts.refuse(gguf, configuration: c)
        try FeedForward.refuseBiases(gguf, configuration: c)
        var temperature: Attention.Temperature?
        if let scale = gguf.float("\(a).attention.temperature_scale"), scale != 0 {
            let floor = gguf.int("\(a).rope.scaling.original_context_length") ?? c.contextLength
            guard scale.isFinite, floor > 0 else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "attention temperature \(scale) needs \(a).rope.scaling.original_context_length above 0")
            }
            temperature = Attention.Temperature(scale: scale, floor: floor)
        }
        let rope = try RotaryEmbedding.read(gguf, configuration: c, pairing: .adjacent, yarnKeys: true)
        embedding = try TokenEmbedding(gguf, configuration: c)
        blocks = try PreNormBlock.llama(gguf, configuration: c, rope: rope, scale: .standard(c), temperature: temperature)
        head = try OutputHead(gguf, configuration: c)
    }
}
