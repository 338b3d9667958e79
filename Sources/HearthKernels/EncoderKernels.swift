import CHearthKernels

/// The float kernels of BERT-style encoders between the matrix products: GELU with the error
/// function, layer norm with the residual added first, and softmax attention of one head over
/// one sequence. The portable and AVX2 paths give the same bits.
public enum EncoderKernels {
    /// `x[i] = x[i] / 2 · (1 + erf(x[i] / √2))` in place, within about 2e-7 · |x| of the exact value.
    public static func gelu(_ x: UnsafeMutablePointer<Float>, count: Int, path: KernelPath = .best) {
        hk_gelu_erf_f32(path.isa, x, Int64(count))
    }

    /// `row = (row + residual - mean) / √(variance + epsilon) · weight + bias` in place over
    /// `count` elements, the variance divided by `count`; `residual` may be nil.
    public static func layerNorm(_ row: UnsafeMutablePointer<Float>, adding residual: UnsafePointer<Float>?,
                                 weight: UnsafePointer<Float>, bias: UnsafePointer<Float>, count: Int, epsilon: Float,
                                 path: KernelPath = .best) {
        hk_layer_norm_f32(path.isa, row, residual, weight, bias, Int64(count), epsilon)
    }

    /// Attention of one head over the `count` tokens of one sequence, with no mask: token `i`
    /// gets `Σⱼ softmaxⱼ(scale · qᵢ·kⱼ) vⱼ`. Token `t`'s query, key and value (`headDimension`
    /// floats each) start `t * stride` floats after `query`, `key` and `value`, and its output
    /// `t * outputStride` floats after `output`. `scratch` holds `count` floats.
    public static func attention(query: UnsafePointer<Float>, key: UnsafePointer<Float>, value: UnsafePointer<Float>,
                                 stride: Int, count: Int, headDimension: Int, scale: Float,
                                 scratch: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, outputStride: Int,
                                 path: KernelPath = .best) {
        hk_encoder_attention_f32(path.isa, query, key, value, Int64(stride), Int64(count), Int64(headDimension), scale,
                                 scratch, output, Int64(outputStride))
    }
}
