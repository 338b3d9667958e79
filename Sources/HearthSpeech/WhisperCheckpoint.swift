import Foundation
import HearthCore
import HearthEngine
import HearthFormats
import HearthKernels

/// One tensor of a Whisper checkpoint as its layout stores it.
struct WhisperTensor {
    /// Sizes, outermost first (PyTorch's order).
    let shape: [Int]
    let type: GGMLType
    /// The elements, inside the file's mapping.
    let data: UnsafeRawBufferPointer
}

/// Whisper's weights, named once for every layout (`WhisperLayouts.swift` maps each to a
/// layout's tensors).
enum WhisperWeight {
    case conv1, conv2                   // (width, mels or width, 3)
    case encoderPositions               // (audioContext, width)
    case encoderAttentionNorm(Int)
    case encoderQKV(Int)                // (3 width, width): query, key, value
    case encoderAttentionOutput(Int)
    case encoderFeedForwardNorm(Int)
    case encoderUp(Int)                 // (4 width, width)
    case encoderDown(Int)               // (width, 4 width)
    case encoderNorm
    case tokenEmbedding                 // (vocabulary, width), also the output projection
    case decoderPositions               // (textContext, width)
    case decoderSelfNorm(Int)
    case decoderSelfQKV(Int)            // (3 width, width)
    case decoderSelfOutput(Int)
    case decoderCrossNorm(Int)
    case decoderCrossQuery(Int)
    case decoderCrossKV(Int)            // (2 width, width) over the encoder's output: key, value
    case decoderCrossOutput(Int)
    case decoderFeedForwardNorm(Int)
    case decoderUp(Int)
    case decoderDown(Int)
    case decoderNorm
}

/// A tensor of a layout that makes part of a weight: its name and the name of its bias (a layer
/// norm's shift), nil where the layout stores none because it is zero.
struct WhisperPiece {
    let weight: String
    let bias: String?
}

/// A Whisper checkpoint in one of the layouts Hearth reads: its sizes, its tensors by its own
/// names, and which of them make each of Whisper's weights.
///
/// A weight may be several tensors stacked row-wise: CTranslate2 stores self-attention's query,
/// key and value as one matrix, the other layouts as three, the key without a bias. Stacking
/// them (with a zero key bias) gives every layout the same matrices, so the computation is the
/// same whatever file the weights came from.
protocol WhisperCheckpoint {
    /// The file, for errors.
    var path: String { get }
    var dimensions: WhisperDimensions { get }
    /// The tensor the layout calls `name`, or nil when it has none.
    func tensor(named name: String) throws -> WhisperTensor?
    /// The tensors that make `weight`, in row order.
    func pieces(of weight: WhisperWeight) -> [WhisperPiece]
}

extension WhisperCheckpoint {
    private func required(_ name: String) throws -> WhisperTensor {
        guard let tensor = try tensor(named: name) else {
            throw HearthError.invalidModelFile(path: path, reason: "tensor \(name) is missing")
        }
        return tensor
    }

    /// `tensor` as floats into `output`: F32 and F16 as they are, quantized blocks dequantized.
    private func dequantize(_ tensor: WhisperTensor, _ name: String, into output: UnsafeMutablePointer<Float>) throws {
        let count = tensor.shape.reduce(1, *)
        do {
            try dequantizeRow(tensor.type, tensor.data.baseAddress!, into: output, count: count)
        } catch {
            throw HearthError.unsupportedModel(reason: "tensor \(name) of \(path) is \(tensor.type.name), which Hearth cannot turn into floats (it reads F32, F16, BF16 and the Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and K-quant blocks)")
        }
    }

    /// The tensor `name` as floats; its shape must be `shape`.
    func floats(_ name: String, _ shape: [Int]) throws -> [Float] {
        let tensor = try required(name)
        guard tensor.shape == shape else {
            throw HearthError.invalidModelFile(path: path, reason: "tensor \(name) has shape \(tensor.shape), expected \(shape)")
        }
        var values = [Float](repeating: 0, count: shape.reduce(1, *))
        try values.withUnsafeMutableBufferPointer { try dequantize(tensor, name, into: $0.baseAddress!) }
        return values
    }

    /// The pieces of `weight`, each of shape (rows, shape[1...]), whose rows add up to
    /// `shape[0]`.
    private func stack(_ weight: WhisperWeight, shape: [Int]) throws -> [(piece: WhisperPiece, tensor: WhisperTensor)] {
        let pieces = try pieces(of: weight).map { ($0, try required($0.weight)) }
        for (piece, tensor) in pieces where tensor.shape.count != shape.count || tensor.shape[0] == 0 || tensor.shape.dropFirst() != shape.dropFirst() {
            throw HearthError.invalidModelFile(path: path, reason: "tensor \(piece.weight) has shape \(tensor.shape), expected (rows, \(shape.dropFirst().map(String.init).joined(separator: ", ")))")
        }
        let rows = pieces.reduce(0) { $0 + $1.1.shape[0] }
        guard rows == shape[0] else {
            let names = pieces.map(\.0.weight).joined(separator: ", ")
            throw HearthError.invalidModelFile(path: path, reason: "\(names) have \(rows) rows together, expected \(shape[0])")
        }
        return pieces
    }

    /// The biases of `pieces` one after another, zeros where a piece has none.
    private func bias(_ pieces: [(piece: WhisperPiece, tensor: WhisperTensor)], rows: Int) throws -> [Float] {
        var bias = [Float](repeating: 0, count: rows)
        var row = 0
        for (piece, tensor) in pieces {
            if let name = piece.bias {
                let values = try floats(name, [tensor.shape[0]])
                bias.replaceSubrange(row..<row + values.count, with: values)
            }
            row += tensor.shape[0]
        }
        return bias
    }

    /// The stacked `pieces` as `rows × columns` floats, row-major.
    private func floats(of pieces: [(piece: WhisperPiece, tensor: WhisperTensor)], rows: Int, columns: Int) throws -> [Float] {
        var weights = [Float](repeating: 0, count: rows * columns)
        try weights.withUnsafeMutableBufferPointer { w in
            var row = 0
            for (piece, tensor) in pieces {
                try dequantize(tensor, piece.weight, into: w.baseAddress! + row * columns)
                row += tensor.shape[0]
            }
        }
        return weights
    }

    /// `weight` as a float matrix of `shape[0]` rows (a convolution's kernel taps folded into
    /// its columns), with its bias when `bias`.
    func dense(_ weight: WhisperWeight, shape: [Int], bias hasBias: Bool = true) throws -> DenseMatrix {
        let pieces = try stack(weight, shape: shape)
        let rows = shape[0], columns = shape.dropFirst().reduce(1, *)
        let weights = try floats(of: pieces, rows: rows, columns: columns)
        let b = hasBias ? try bias(pieces, rows: rows) : nil
        return weights.withUnsafeBufferPointer { w in
            if let b { return b.withUnsafeBufferPointer { DenseMatrix(rows: rows, columns: columns, weights: w.baseAddress!, bias: $0.baseAddress!) } }
            return DenseMatrix(rows: rows, columns: columns, weights: w.baseAddress!, bias: nil)
        }
    }

    /// `weight` for the decoder, which multiplies one token's vector at a time: half precision
    /// when every piece is F16 (half the bytes a token reads), else floats.
    func vector(_ weight: WhisperWeight, rows: Int, columns: Int, bias hasBias: Bool = true) throws -> any Matrix {
        let pieces = try stack(weight, shape: [rows, columns])
        guard pieces.allSatisfy({ $0.tensor.type == .f16 }) else {
            return try dense(weight, shape: [rows, columns], bias: hasBias)
        }
        var halves = [UInt8](repeating: 0, count: rows * columns * 2)
        halves.withUnsafeMutableBytes { out in
            var offset = 0
            for (_, tensor) in pieces {
                out.baseAddress!.advanced(by: offset).copyMemory(from: tensor.data.baseAddress!, byteCount: tensor.data.count)
                offset += tensor.data.count
            }
        }
        let b = hasBias ? try bias(pieces, rows: rows) : nil
        return halves.withUnsafeBytes { HalfMatrix(rows: rows, columns: columns, halfBits: $0.baseAddress!, bias: b) }
    }

    /// `weight` (of two dimensions) as Q8_0: a Q8_0 file's blocks as they are, other types
    /// rounded from their floats.
    func q8_0(_ weight: WhisperWeight, shape: [Int], bias hasBias: Bool = true) throws -> Q8Matrix {
        let pieces = try stack(weight, shape: shape)
        let rows = shape[0], columns = shape[1]
        let b = hasBias ? try bias(pieces, rows: rows) : nil
        func make(_ bias: UnsafePointer<Float>?) throws -> Q8Matrix {
            guard pieces.allSatisfy({ $0.tensor.type == .q8_0 }) else {
                return try floats(of: pieces, rows: rows, columns: columns).withUnsafeBufferPointer { Q8Matrix(rows: rows, columns: columns, floats: $0.baseAddress!, bias: bias) }
            }
            var blocks = [UInt8]()
            blocks.reserveCapacity(pieces.reduce(0) { $0 + $1.tensor.data.count })
            for (_, tensor) in pieces { blocks += tensor.data }
            return blocks.withUnsafeBytes { Q8Matrix(rows: rows, columns: columns, blocks: $0.baseAddress!, bias: bias) }
        }
        if let b { return try b.withUnsafeBufferPointer { try make($0.baseAddress!) } }
        return try make(nil)
    }

    /// The layer norm `weight` over `width` features.
    func norm(_ weight: WhisperWeight, width: Int) throws -> LayerNorm {
        let pieces = pieces(of: weight)
        guard pieces.count == 1, let shift = pieces[0].bias else { preconditionFailure("a layer norm is one scale and one shift") }
        return LayerNorm(weight: try floats(pieces[0].weight, [width]), bias: try floats(shift, [width]), epsilon: 1e-5)
    }

    /// The plain tensor `weight` (positions) as floats of `shape`.
    func floats(_ weight: WhisperWeight, _ shape: [Int]) throws -> [Float] {
        let pieces = pieces(of: weight)
        guard pieces.count == 1 else { preconditionFailure("a plain tensor is one piece") }
        return try floats(pieces[0].weight, shape)
    }
}
