import HearthCore
import HearthFormats
import HearthKernels

/// RMSNorm with a learned scale: `y = x / sqrt(mean(x²) + eps) * weight`. (Gemma's `1 + w` is
/// folded into the weights when a model is converted to GGUF, so it is the same layer.)
struct RMSNorm {
    let weight: FloatBuffer     // (width)
    let epsilon: Float

    /// The norm stored as `name` in `gguf`, `width` values wide.
    init(_ gguf: GGUFFile, _ name: String, width: Int, epsilon: Float) throws {
        weight = try loadVector(gguf, name, count: width)
        self.epsilon = epsilon
    }

    var width: Int { weight.count }

    /// Normalises `rows` consecutive rows of `width` floats (in place when `y` is `x`).
    func callAsFunction(rows: Int, _ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>) {
        TensorMath.rmsNorm(rows: rows, x, weight: weight.pointer, epsilon: epsilon, count: width, into: y)
    }

    /// Normalises every row of `x` in `pass`: the residual stream into `pass.normed` (the stream
    /// itself stays as it is), a block's output in place. Returns where the result is.
    func callAsFunction(_ x: UnsafeMutablePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let output = x == pass.residual ? pass.normed : x
        self(rows: pass.rows, x, into: output)
        return output
    }

    /// Normalises each of `heads` consecutive slices of `width` floats in place (per-head Q and
    /// K norms).
    func perHead(_ x: UnsafeMutablePointer<Float>, heads: Int) {
        TensorMath.rmsNorm(rows: heads, x, weight: weight.pointer, epsilon: epsilon, count: width, into: x)
    }
}

/// A small tensor (a norm's weights, a bias) as floats, whatever its stored type.
func loadVector(_ gguf: GGUFFile, _ name: String, count: Int) throws -> FloatBuffer {
    guard let info = gguf.tensorInfo(named: name) else {
        throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "tensor \(name) is missing")
    }
    guard info.elementCount == count else {
        throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                           reason: "tensor \(name) has \(info.elementCount) elements, expected \(count)")
    }
    let buffer = FloatBuffer(count)
    try dequantizeRow(info.type, gguf.data(for: info).baseAddress!, into: buffer.pointer, count: count)
    return buffer
}

/// The tensor `name` as floats when the file has it.
func loadOptionalVector(_ gguf: GGUFFile, _ name: String, count: Int) throws -> FloatBuffer? {
    gguf.tensorInfo(named: name) == nil ? nil : try loadVector(gguf, name, count: count)
}
