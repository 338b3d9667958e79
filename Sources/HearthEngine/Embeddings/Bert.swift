import Foundation
import HearthCore
import HearthKernels

/// Hyperparameters of a BERT encoder, from its `config.json`.
public struct BertConfiguration: Sendable, Equatable {
    public var hiddenSize: Int
    public var layerCount: Int
    public var headCount: Int
    public var intermediateSize: Int
    public var maximumPositions: Int
    public var typeVocabularySize: Int
    public var vocabularySize: Int
    public var layerNormEpsilon: Float

    /// Reads and checks `config.json`; anything but an absolute-position BERT with GELU is
    /// refused by name.
    public init(json data: Data, path: String = "config.json") throws {
        func invalid(_ reason: String) -> HearthError { .invalidModelFile(path: path, reason: reason) }
        guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw invalid("it is not a JSON object")
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int {
            guard let value = (root[key] as? NSNumber)?.intValue else { throw invalid("\(key) is missing") }
            guard range.contains(value) else { throw invalid("\(key) is \(value), outside \(range)") }
            return value
        }
        let type = root["model_type"] as? String ?? "unknown"
        guard type == "bert" else { throw HearthError.unsupportedModel(reason: "encoder type \(type) (supported: bert)") }
        let activation = root["hidden_act"] as? String ?? "gelu"
        guard activation == "gelu" else { throw HearthError.unsupportedModel(reason: "BERT activation \(activation) (supported: gelu)") }
        let positions = root["position_embedding_type"] as? String ?? "absolute"
        guard positions == "absolute" else {
            throw HearthError.unsupportedModel(reason: "BERT position embeddings \(positions) (supported: absolute)")
        }
        hiddenSize = try integer("hidden_size", 1...16_384)
        layerCount = try integer("num_hidden_layers", 1...256)
        headCount = try integer("num_attention_heads", 1...256)
        intermediateSize = try integer("intermediate_size", 1...65_536)
        maximumPositions = try integer("max_position_embeddings", 2...65_536)
        typeVocabularySize = try integer("type_vocab_size", 1...1024)
        vocabularySize = try integer("vocab_size", 1...1_000_000)
        let epsilon = (root["layer_norm_eps"] as? NSNumber)?.floatValue ?? 1e-12
        guard epsilon > 0, epsilon < 1 else { throw invalid("layer_norm_eps is \(epsilon)") }
        layerNormEpsilon = epsilon
        guard hiddenSize % headCount == 0 else {
            throw invalid("hidden_size \(hiddenSize) is not a multiple of num_attention_heads \(headCount)")
        }
    }

    /// Width of one attention head.
    public var headDimension: Int { hiddenSize / headCount }
}

/// BERT: the sum of word, absolute position and segment embeddings through a LayerNorm, then
/// post-norm blocks, each `x = norm(x + attention(x))` (bidirectional) and
/// `x = norm(x + ffn(x))` (GELU); with a classification head when loaded as a cross-encoder.
final class Bert: EncoderArchitecture {
    let configuration: BertConfiguration
    let words, positions, types: EmbeddingTable
    let embeddingNorm: LayerNorm
    let blocks: [PostNormEncoderBlock]
    let classifier: SequenceClassifier?

    init(_ weights: EncoderWeights, configuration c: BertConfiguration, classifierLabels: Int?) throws {
        let h = c.hiddenSize
        func norm(_ name: String) throws -> LayerNorm {
            LayerNorm(weight: try weights.vector(name + ".weight", h), bias: try weights.vector(name + ".bias", h), width: h,
                      epsilon: c.layerNormEpsilon)
        }
        configuration = c
        words = try weights.table("embeddings.word_embeddings.weight", c.vocabularySize, h)
        positions = try weights.table("embeddings.position_embeddings.weight", c.maximumPositions, h)
        types = try weights.table("embeddings.token_type_embeddings.weight", c.typeVocabularySize, h)
        embeddingNorm = try norm("embeddings.LayerNorm")
        blocks = try (0..<c.layerCount).map { i in
            let p = "encoder.layer.\(i)."
            let qkv = DenseMatrix(stacking: [try weights.dense(p + "attention.self.query", h, h),
                                             try weights.dense(p + "attention.self.key", h, h),
                                             try weights.dense(p + "attention.self.value", h, h)])
            return PostNormEncoderBlock(
                qkv: qkv,
                attention: BidirectionalAttention(heads: c.headCount, width: h, order: .perQuery),
                attentionOutput: try weights.dense(p + "attention.output.dense", h, h),
                attentionNorm: try norm(p + "attention.output.LayerNorm"),
                feedForward: DenseFeedForward(up: try weights.dense(p + "intermediate.dense", c.intermediateSize, h),
                                              down: try weights.dense(p + "output.dense", h, c.intermediateSize)),
                outputNorm: try norm(p + "output.LayerNorm"))
        }
        // The pooler sits inside `bert.`, the classifier beside it.
        classifier = try classifierLabels.map { labels in
            SequenceClassifier(pooler: try weights.dense("pooler.dense", h, h),
                               classifier: try weights.dense("classifier", labels, h, prefixed: false))
        }
    }

    func forward(_ pass: EncoderPass, tokens: [[Int32]], typeIds: [[Int32]]?) {
        pass.embed { row, s, position in
            words.copy(Int(tokens[s][position]), into: row)
            positions.add(position, to: row)
            types.add(Int(typeIds?[s][position] ?? 0), to: row)
            embeddingNorm(row)
        }
        for block in blocks { block(pass) }
    }
}

/// BERT's block: `x = norm(x + attention(x))`, then `x = norm(x + ffn(x))`.
struct PostNormEncoderBlock: Sendable {
    /// (3 × width, width): Q, K and V stacked.
    let qkv: DenseMatrix
    let attention: BidirectionalAttention
    /// (width, width).
    let attentionOutput: DenseMatrix
    let attentionNorm: LayerNorm
    let feedForward: DenseFeedForward
    let outputNorm: LayerNorm

    func callAsFunction(_ pass: EncoderPass) {
        pass.project(.stream, through: qkv, into: .qkv)
        pass.attend(attention)
        pass.project(.attended, through: attentionOutput, into: .projected)
        pass.addAndNorm(.projected, attentionNorm)
        pass.project(.stream, through: feedForward.up, into: .wide, activation: .gelu)
        pass.project(.wide, through: feedForward.down, into: .projected)
        pass.addAndNorm(.projected, outputNorm)
    }
}
