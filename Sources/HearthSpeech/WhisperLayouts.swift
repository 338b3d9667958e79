import Foundation
import HearthCore
import HearthFormats

// The three layouts Whisper's weights come in, each mapping Whisper's weights to its own
// tensor names in one place.

/// faster-whisper's CTranslate2 `model.bin`: query, key and value already stacked (the key's
/// bias stored as zeros), layer norms as `gamma` and `beta`, sizes read from the shapes.
struct CTranslate2Checkpoint: WhisperCheckpoint {
    let file: CTranslate2File
    let dimensions: WhisperDimensions
    var path: String { file.mapping.path }

    init(_ file: CTranslate2File) throws {
        self.file = file
        let path = file.mapping.path
        guard file.specName == "WhisperSpec" else {
            throw HearthError.unsupportedModel(reason: "\(path) holds a CTranslate2 \(file.specName.isEmpty ? "model" : file.specName), not Whisper")
        }
        func shape(_ name: String) throws -> [Int] {
            guard let v = file.variable(named: name) else {
                throw HearthError.invalidModelFile(path: path, reason: "variable \(name) is missing")
            }
            return v.shape
        }
        let embeddingShape = try shape("decoder/embeddings/weight")
        let convShape = try shape("encoder/conv1/weight")
        let encoderPositionShape = try shape("encoder/position_encodings/encodings")
        let decoderPositionShape = try shape("decoder/position_encodings/encodings")
        guard embeddingShape.count == 2, convShape.count == 3, convShape[2] == 3, encoderPositionShape.count == 2,
              decoderPositionShape.count == 2 else {
            throw HearthError.invalidModelFile(path: path, reason: "its embeddings or convolutions have unexpected shapes")
        }
        let width = embeddingShape[1]
        func count(_ prefix: String) -> Int {
            var n = 0
            while file.variable(named: "\(prefix)/layer_\(n)/ffn/linear_0/weight") != nil { n += 1 }
            return n
        }
        let heads = try file.integer(named: "encoder/num_heads") ?? 8
        guard heads > 0, width % heads == 0, convShape[0] == width else {
            throw HearthError.invalidModelFile(path: path, reason: "width \(width) does not split into \(heads) heads")
        }
        if let activation = try file.integer(named: "decoder/activation"), activation != 3 {
            throw HearthError.unsupportedModel(reason: "\(path) uses activation \(activation); Whisper's is GELU (3)")
        }
        dimensions = WhisperDimensions(melCount: convShape[1], audioContext: encoderPositionShape[0], width: width, heads: heads,
                                       encoderLayers: count("encoder"), decoderLayers: count("decoder"),
                                       vocabularySize: embeddingShape[0], textContext: decoderPositionShape[0])
    }

    func tensor(named name: String) throws -> WhisperTensor? {
        guard let v = file.variable(named: name) else { return nil }
        let type: GGMLType
        switch v.dtype {
        case .float32: type = .f32
        case .float16: type = .f16
        case .bfloat16: type = .bf16
        default:
            throw HearthError.unsupportedModel(reason: "variable \(name) of \(path) is \(v.dtype); Hearth reads float32, float16 and bfloat16 Whisper weights (convert with --quantization float16)")
        }
        return WhisperTensor(shape: v.shape, type: type, data: file.data(for: v))
    }

    func pieces(of weight: WhisperWeight) -> [WhisperPiece] {
        func linear(_ name: String) -> [WhisperPiece] { [WhisperPiece(weight: name + "/weight", bias: name + "/bias")] }
        func norm(_ name: String) -> [WhisperPiece] { [WhisperPiece(weight: name + "/gamma", bias: name + "/beta")] }
        switch weight {
        case .conv1: return linear("encoder/conv1")
        case .conv2: return linear("encoder/conv2")
        case .encoderPositions: return [WhisperPiece(weight: "encoder/position_encodings/encodings", bias: nil)]
        case .encoderAttentionNorm(let i): return norm("encoder/layer_\(i)/self_attention/layer_norm")
        case .encoderQKV(let i): return linear("encoder/layer_\(i)/self_attention/linear_0")
        case .encoderAttentionOutput(let i): return linear("encoder/layer_\(i)/self_attention/linear_1")
        case .encoderFeedForwardNorm(let i): return norm("encoder/layer_\(i)/ffn/layer_norm")
        case .encoderUp(let i): return linear("encoder/layer_\(i)/ffn/linear_0")
        case .encoderDown(let i): return linear("encoder/layer_\(i)/ffn/linear_1")
        case .encoderNorm: return norm("encoder/layer_norm")
        case .tokenEmbedding: return [WhisperPiece(weight: "decoder/embeddings/weight", bias: nil)]
        case .decoderPositions: return [WhisperPiece(weight: "decoder/position_encodings/encodings", bias: nil)]
        case .decoderSelfNorm(let i): return norm("decoder/layer_\(i)/self_attention/layer_norm")
        case .decoderSelfQKV(let i): return linear("decoder/layer_\(i)/self_attention/linear_0")
        case .decoderSelfOutput(let i): return linear("decoder/layer_\(i)/self_attention/linear_1")
        case .decoderCrossNorm(let i): return norm("decoder/layer_\(i)/attention/layer_norm")
        case .decoderCrossQuery(let i): return linear("decoder/layer_\(i)/attention/linear_0")
        case .decoderCrossKV(let i): return linear("decoder/layer_\(i)/attention/linear_1")
        case .decoderCrossOutput(let i): return linear("decoder/layer_\(i)/attention/linear_2")
        case .decoderFeedForwardNorm(let i): return norm("decoder/layer_\(i)/ffn/layer_norm")
        case .decoderUp(let i): return linear("decoder/layer_\(i)/ffn/linear_0")
        case .decoderDown(let i): return linear("decoder/layer_\(i)/ffn/linear_1")
        case .decoderNorm: return norm("decoder/layer_norm")
        }
    }
}

/// The sizes in a Hugging Face Whisper `config.json`, under Transformers' names.
public struct WhisperConfig: Decodable, Sendable {
    /// `whisper`.
    public let modelType: String?
    /// Tokens the model scores.
    public let vocabularySize: Int
    /// Mel bands of the input.
    public let melCount: Int
    /// Width of the encoder and the decoder.
    public let width: Int
    /// Encoder layers.
    public let encoderLayers: Int
    /// Encoder attention heads.
    public let encoderHeads: Int
    /// Decoder layers.
    public let decoderLayers: Int
    /// Decoder attention heads.
    public let decoderHeads: Int
    /// Encoder positions: 1500.
    public let audioContext: Int
    /// Decoder positions: 448.
    public let textContext: Int
    /// `gelu` for every Whisper.
    public let activation: String?
    /// Whether the output projection is the token embedding (true unless a checkpoint says not).
    public let tiesWordEmbeddings: Bool?

    enum CodingKeys: String, CodingKey {
        case modelType = "model_type"
        case vocabularySize = "vocab_size"
        case melCount = "num_mel_bins"
        case width = "d_model"
        case encoderLayers = "encoder_layers"
        case encoderHeads = "encoder_attention_heads"
        case decoderLayers = "decoder_layers"
        case decoderHeads = "decoder_attention_heads"
        case audioContext = "max_source_positions"
        case textContext = "max_target_positions"
        case activation = "activation_function"
        case tiesWordEmbeddings = "tie_word_embeddings"
    }

    /// Reads `config.json`; `path` names it in errors.
    public init(json data: Data, path: String) throws {
        do {
            self = try JSONDecoder().decode(WhisperConfig.self, from: data)
        } catch {
            throw HearthError.invalidModelFile(path: path, reason: "it is not the config.json of a Hugging Face Whisper model (\(error))")
        }
    }
}

/// A Hugging Face `WhisperForConditionalGeneration` checkpoint (`openai/whisper-*`):
/// `model.safetensors` with the sizes of its `config.json`; query, key and value as three
/// projections, the key without a bias; the output projection tied to the token embedding.
struct HuggingFaceWhisperCheckpoint: WhisperCheckpoint {
    let file: SafetensorsFile
    let dimensions: WhisperDimensions
    /// `model.` for `WhisperForConditionalGeneration`, empty for a bare `WhisperModel`.
    let prefix: String
    var path: String { file.mapping.path }

    init(_ file: SafetensorsFile, config: WhisperConfig) throws {
        self.file = file
        let path = file.mapping.path
        if let type = config.modelType, type != "whisper" {
            throw HearthError.unsupportedModel(reason: "\(path) is a \(type) model, not Whisper (config.json's model_type)")
        }
        if let activation = config.activation, activation != "gelu" {
            throw HearthError.unsupportedModel(reason: "\(path) uses activation \(activation); Whisper's is gelu")
        }
        if config.tiesWordEmbeddings == false {
            throw HearthError.unsupportedModel(reason: "\(path) has an output projection of its own (tie_word_embeddings is false); Hearth's Whisper projects with the token embedding")
        }
        guard config.encoderHeads == config.decoderHeads else {
            throw HearthError.unsupportedModel(reason: "\(path) has \(config.encoderHeads) encoder heads and \(config.decoderHeads) decoder heads; Hearth's Whisper has one head count")
        }
        let sizes = [config.vocabularySize, config.melCount, config.width, config.encoderLayers, config.encoderHeads,
                     config.decoderLayers, config.audioContext, config.textContext]
        guard sizes.allSatisfy({ $0 > 0 }), config.width % config.encoderHeads == 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "its config.json sizes \(sizes) are not positive, or width \(config.width) does not split into \(config.encoderHeads) heads")
        }
        prefix = file.tensor(named: "model.encoder.conv1.weight") != nil ? "model." : ""
        dimensions = WhisperDimensions(melCount: config.melCount, audioContext: config.audioContext, width: config.width,
                                       heads: config.encoderHeads, encoderLayers: config.encoderLayers,
                                       decoderLayers: config.decoderLayers, vocabularySize: config.vocabularySize,
                                       textContext: config.textContext)
    }

    func tensor(named name: String) throws -> WhisperTensor? {
        guard let t = file.tensor(named: name) else { return nil }
        let type: GGMLType
        switch t.dtype {
        case .f32: type = .f32
        case .f16: type = .f16
        case .bf16: type = .bf16
        default:
            throw HearthError.unsupportedModel(reason: "tensor \(name) of \(path) is \(t.dtype.rawValue); Hearth reads F32, F16 and BF16 Whisper weights")
        }
        return WhisperTensor(shape: t.shape, type: type, data: file.data(for: t))
    }

    func pieces(of weight: WhisperWeight) -> [WhisperPiece] {
        let encoder = prefix + "encoder.", decoder = prefix + "decoder."
        func linear(_ name: String) -> WhisperPiece { WhisperPiece(weight: name + ".weight", bias: name + ".bias") }
        // The key projections have no bias: a constant added to every key shifts all of a
        // query's scores equally, which the softmax cancels.
        func key(_ name: String) -> WhisperPiece { WhisperPiece(weight: name + ".weight", bias: nil) }
        func attention(_ name: String) -> [WhisperPiece] { [linear(name + ".q_proj"), key(name + ".k_proj"), linear(name + ".v_proj")] }
        switch weight {
        case .conv1: return [linear(encoder + "conv1")]
        case .conv2: return [linear(encoder + "conv2")]
        case .encoderPositions: return [WhisperPiece(weight: encoder + "embed_positions.weight", bias: nil)]
        case .encoderAttentionNorm(let i): return [linear(encoder + "layers.\(i).self_attn_layer_norm")]
        case .encoderQKV(let i): return attention(encoder + "layers.\(i).self_attn")
        case .encoderAttentionOutput(let i): return [linear(encoder + "layers.\(i).self_attn.out_proj")]
        case .encoderFeedForwardNorm(let i): return [linear(encoder + "layers.\(i).final_layer_norm")]
        case .encoderUp(let i): return [linear(encoder + "layers.\(i).fc1")]
        case .encoderDown(let i): return [linear(encoder + "layers.\(i).fc2")]
        case .encoderNorm: return [linear(encoder + "layer_norm")]
        case .tokenEmbedding: return [WhisperPiece(weight: decoder + "embed_tokens.weight", bias: nil)]
        case .decoderPositions: return [WhisperPiece(weight: decoder + "embed_positions.weight", bias: nil)]
        case .decoderSelfNorm(let i): return [linear(decoder + "layers.\(i).self_attn_layer_norm")]
        case .decoderSelfQKV(let i): return attention(decoder + "layers.\(i).self_attn")
        case .decoderSelfOutput(let i): return [linear(decoder + "layers.\(i).self_attn.out_proj")]
        case .decoderCrossNorm(let i): return [linear(decoder + "layers.\(i).encoder_attn_layer_norm")]
        case .decoderCrossQuery(let i): return [linear(decoder + "layers.\(i).encoder_attn.q_proj")]
        case .decoderCrossKV(let i):
            return [key(decoder + "layers.\(i).encoder_attn.k_proj"), linear(decoder + "layers.\(i).encoder_attn.v_proj")]
        case .decoderCrossOutput(let i): return [linear(decoder + "layers.\(i).encoder_attn.out_proj")]
        case .decoderFeedForwardNorm(let i): return [linear(decoder + "layers.\(i).final_layer_norm")]
        case .decoderUp(let i): return [linear(decoder + "layers.\(i).fc1")]
        case .decoderDown(let i): return [linear(decoder + "layers.\(i).fc2")]
        case .decoderNorm: return [linear(decoder + "layer_norm")]
        }
    }
}

/// A whisper.cpp file: OpenAI's checkpoint names, query, key and value as three matrices (the
/// key without a bias), sizes from the hyperparameters.
struct WhisperGGMLCheckpoint: WhisperCheckpoint {
    let file: WhisperGGMLFile
    let dimensions: WhisperDimensions
    var path: String { file.mapping.path }

    init(_ file: WhisperGGMLFile) throws {
        self.file = file
        let h = file.hyperparameters, path = file.mapping.path
        guard h.audioWidth == h.textWidth, h.audioHeads == h.textHeads else {
            throw HearthError.unsupportedModel(reason: "\(path) has an encoder of width \(h.audioWidth) with \(h.audioHeads) heads and a decoder of width \(h.textWidth) with \(h.textHeads); Hearth's Whisper has one width and head count")
        }
        guard h.audioWidth % h.audioHeads == 0 else {
            throw HearthError.invalidModelFile(path: path, reason: "width \(h.audioWidth) does not split into \(h.audioHeads) heads")
        }
        dimensions = WhisperDimensions(melCount: h.melCount, audioContext: h.audioContext, width: h.audioWidth, heads: h.audioHeads,
                                       encoderLayers: h.audioLayers, decoderLayers: h.textLayers,
                                       vocabularySize: h.vocabularySize, textContext: h.textContext)
    }

    func tensor(named name: String) throws -> WhisperTensor? {
        guard let t = file.tensor(named: name) else { return nil }
        // The converter squeezes every tensor and then stores the convolution biases as
        // (width, 1); Whisper has no axis of size 1, so squeezing again gives the true shapes.
        let shape = t.shape.count > 1 ? t.shape.filter { $0 != 1 } : t.shape
        return WhisperTensor(shape: shape, type: t.type, data: file.data(for: t))
    }

    func pieces(of weight: WhisperWeight) -> [WhisperPiece] {
        func linear(_ name: String) -> WhisperPiece { WhisperPiece(weight: name + ".weight", bias: name + ".bias") }
        func key(_ name: String) -> WhisperPiece { WhisperPiece(weight: name + ".weight", bias: nil) }
        func attention(_ name: String) -> [WhisperPiece] { [linear(name + ".query"), key(name + ".key"), linear(name + ".value")] }
        switch weight {
        case .conv1: return [linear("encoder.conv1")]
        case .conv2: return [linear("encoder.conv2")]
        case .encoderPositions: return [WhisperPiece(weight: "encoder.positional_embedding", bias: nil)]
        case .encoderAttentionNorm(let i): return [linear("encoder.blocks.\(i).attn_ln")]
        case .encoderQKV(let i): return attention("encoder.blocks.\(i).attn")
        case .encoderAttentionOutput(let i): return [linear("encoder.blocks.\(i).attn.out")]
        case .encoderFeedForwardNorm(let i): return [linear("encoder.blocks.\(i).mlp_ln")]
        case .encoderUp(let i): return [linear("encoder.blocks.\(i).mlp.0")]
        case .encoderDown(let i): return [linear("encoder.blocks.\(i).mlp.2")]
        case .encoderNorm: return [linear("encoder.ln_post")]
        case .tokenEmbedding: return [WhisperPiece(weight: "decoder.token_embedding.weight", bias: nil)]
        case .decoderPositions: return [WhisperPiece(weight: "decoder.positional_embedding", bias: nil)]
        case .decoderSelfNorm(let i): return [linear("decoder.blocks.\(i).attn_ln")]
        case .decoderSelfQKV(let i): return attention("decoder.blocks.\(i).attn")
        case .decoderSelfOutput(let i): return [linear("decoder.blocks.\(i).attn.out")]
        case .decoderCrossNorm(let i): return [linear("decoder.blocks.\(i).cross_attn_ln")]
        case .decoderCrossQuery(let i): return [linear("decoder.blocks.\(i).cross_attn.query")]
        case .decoderCrossKV(let i): return [key("decoder.blocks.\(i).cross_attn.key"), linear("decoder.blocks.\(i).cross_attn.value")]
        case .decoderCrossOutput(let i): return [linear("decoder.blocks.\(i).cross_attn.out")]
        case .decoderFeedForwardNorm(let i): return [linear("decoder.blocks.\(i).mlp_ln")]
        case .decoderUp(let i): return [linear("decoder.blocks.\(i).mlp.0")]
        case .decoderDown(let i): return [linear("decoder.blocks.\(i).mlp.2")]
        case .decoderNorm: return [linear("decoder.ln")]
        }
    }
}
