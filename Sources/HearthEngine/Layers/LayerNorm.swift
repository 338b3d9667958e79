import HearthKernels

/// LayerNorm with a learned scale and shift, beside RMSNorm: `y = (x - mean) / √(variance + ε) ·
/// weight + bias`, the variance divided by the width (BERT, Whisper). A post-norm block adds its
/// residual first: `norm(x + f(x))`.
struct LayerNorm: @unchecked Sendable {
    /// (width) each.
    let weight, bias: UnsafePointer<Float>
    let width: Int
    let epsilon: Float

    /// `row = norm(row + residual)` in place (`norm(row)` without a residual).
    func callAsFunction(_ row: UnsafeMutablePointer<Float>, adding residual: UnsafePointer<Float>? = nil) {
        EncoderKernels.layerNorm(row, adding: residual, weight: weight, bias: bias, count: width, epsilon: epsilon)
    }
}
