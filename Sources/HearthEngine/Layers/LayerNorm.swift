import HearthKernels

/// LayerNorm with a learned scale and shift, beside RMSNorm: `y = (x - mean) / √(variance + ε) ·
/// weight + bias`, the variance divided by the width (BERT, Whisper). A post-norm block adds its
/// residual first: `norm(x + f(x))`.
package struct LayerNorm: @unchecked Sendable {
    /// (width) each.
    let weight, bias: UnsafePointer<Float>
    let width: Int
    let epsilon: Float
    /// The weight and bias when the norm holds them itself rather than pointing into a model's
    /// weights.
    private let storage: FloatBuffer?

    /// A norm over weights that someone else keeps alive (an encoder's loaded weights).
    init(weight: UnsafePointer<Float>, bias: UnsafePointer<Float>, width: Int, epsilon: Float) {
        (self.weight, self.bias, self.width, self.epsilon, storage) = (weight, bias, width, epsilon, nil)
    }

    /// A norm holding a copy of `weight` and `bias` (the same count each).
    package init(weight: [Float], bias: [Float], epsilon: Float) {
        precondition(weight.count == bias.count, "a layer norm's weight and bias have one value per feature each")
        let width = weight.count, storage = FloatBuffer(2 * width)
        storage.pointer.update(from: weight, count: width)
        (storage.pointer + width).update(from: bias, count: width)
        (self.weight, self.bias) = (UnsafePointer(storage.pointer), UnsafePointer(storage.pointer + width))
        (self.width, self.epsilon, self.storage) = (width, epsilon, storage)
    }

    /// `row = norm(row + residual)` in place (`norm(row)` without a residual).
    package func callAsFunction(_ row: UnsafeMutablePointer<Float>, adding residual: UnsafePointer<Float>? = nil) {
        EncoderKernels.layerNorm(row, adding: residual, weight: weight, bias: bias, count: width, epsilon: epsilon)
    }

    /// Each of `rows` consecutive rows in place, split across `pool`'s threads when there is one.
    package func callAsFunction(rows: Int, _ x: UnsafeMutablePointer<Float>, pool: WorkerPool? = nil) {
        let body = { (range: Range<Int>) in
            for t in range { self(x + t * width) }
        }
        if let pool { pool.parallelFor(rows, body) } else { body(0..<rows) }
    }
}
