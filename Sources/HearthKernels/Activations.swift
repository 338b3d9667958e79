import CHearthKernels
import Foundation
import HearthFormats

/// The float kernels between matrix products: attention over a half-precision KV cache,
/// SiLU and GELU gating, softmax and half-precision conversion. Their sums follow the order of
/// llama.cpp's CPU backend, so outputs round exactly as llama.cpp's do; the portable and AVX2
/// paths give the same bits.
public enum Activations {
    /// Largest attention head the attention kernel takes.
    public static let maximumHeadDimension = 512

    /// Attention of one query head over `positions` cached positions: softmax of the scaled
    /// query-key products, then the weighted sum of the values. Keys and values of position `t`
    /// start at `keys + t * stride` and `values + t * stride` (half precision). `single` picks
    /// the summation order llama.cpp uses when a pass evaluates one token rather than several.
    /// `firstPosition` is the cache position of the first key (past a sliding window's start):
    /// sums are grouped by cache position, as llama.cpp's are.
    /// `scratch` holds `positions` floats; `output` receives `headDimension` floats.
    public static func attentionHead(
        query: UnsafePointer<Float>, keys: UnsafePointer<UInt16>, values: UnsafePointer<UInt16>, stride: Int,
        positions: Int, headDimension: Int, scale: Float, softcap: Float = 0, single: Bool, firstPosition: Int = 0,
        scratch: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, path: KernelPath = .best
    ) {
        precondition(headDimension > 0 && headDimension <= maximumHeadDimension && positions > 0)
        hk_attention_head_f16(path.isa, query, keys, values, Int64(stride), Int64(positions), Int64(headDimension),
                              scale, softcap, single ? 1 : 0, Int64(firstPosition), scratch, output)
    }

    /// `attentionHead` for `heads` consecutive query heads (at `query`, `headDimension` floats
    /// each; results likewise at `output`) that share one key/value head. Each key and value row
    /// is read once for all of them, and each head gets exactly what `attentionHead` gives it.
    /// `scratch` holds `min(heads, 4) * positions` floats. `sinks`, when given, holds each head's
    /// attention sink: a score that joins the softmax and weighs no value.
    public static func attentionHeads(
        query: UnsafePointer<Float>, heads: Int, keys: UnsafePointer<UInt16>, values: UnsafePointer<UInt16>, stride: Int,
        positions: Int, headDimension: Int, scale: Float, softcap: Float = 0, single: Bool, firstPosition: Int = 0,
        sinks: UnsafePointer<Float>? = nil, scratch: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>,
        path: KernelPath = .best
    ) {
        precondition(headDimension > 0 && headDimension <= maximumHeadDimension && positions > 0 && heads > 0)
        hk_attention_heads_f16(path.isa, query, Int64(heads), keys, values, Int64(stride), Int64(positions), Int64(headDimension),
                               scale, softcap, single ? 1 : 0, Int64(firstPosition), sinks, scratch, output)
    }

    /// `attentionHeads` over a cache whose keys are of `keyType` and values of `valueType`
    /// (`.f16`, `.q8_0` or `.q4_0`; position t's key at `keys + t * keyRowBytes`, its value at
    /// `values + t * valueRowBytes`). Both half: exactly `attentionHeads`. Quantized keys are
    /// multiplied by the query quantized to Q8_0 and quantized values dequantized a row at a
    /// time, as llama.cpp's products take those types.
    public static func attentionHeads(
        query: UnsafePointer<Float>, heads: Int, keys: UnsafeRawPointer, keyType: GGMLType, keyRowBytes: Int,
        values: UnsafeRawPointer, valueType: GGMLType, valueRowBytes: Int, positions: Int, headDimension: Int,
        scale: Float, softcap: Float = 0, single: Bool, firstPosition: Int = 0, sinks: UnsafePointer<Float>? = nil,
        scratch: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>, path: KernelPath = .best
    ) {
        precondition(headDimension > 0 && headDimension <= maximumHeadDimension && positions > 0 && heads > 0)
        precondition(isCacheRow(keyType, keyRowBytes, headDimension) && isCacheRow(valueType, valueRowBytes, headDimension),
                     "KV cache rows are f16, q8_0 or q4_0 of \(headDimension) values")
        hk_attention_heads_kv(path.isa, query, Int64(heads), keys, keyType.rawValue, keyRowBytes, values, valueType.rawValue,
                              valueRowBytes, Int64(positions), Int64(headDimension), scale, softcap, single ? 1 : 0,
                              Int64(firstPosition), sinks, scratch, output)
    }

    /// Whether `rowBytes` is one row of `count` values of a KV cache type (f16, q8_0, q4_0).
    private static func isCacheRow(_ type: GGMLType, _ rowBytes: Int, _ count: Int) -> Bool {
        switch type {
        case .f16, .q8_0, .q4_0: return type.byteCount(elements: count) == rowBytes
        default: return false
        }
    }

    /// Stores `count` floats as one row of a KV cache of `type` (`.f16`, or `.q8_0` and `.q4_0`
    /// quantized as llama.cpp quantizes its cache, `count` a multiple of 32).
    public static func storeCacheRow(_ x: UnsafePointer<Float>, type: GGMLType, into row: UnsafeMutableRawPointer, count: Int,
                                     path: KernelPath = .best) {
        let status = hk_kv_store_row(path.isa, type.rawValue, x, row, Int64(count))
        precondition(status == 0, "no KV cache row of \(type) for \(count) values")
    }

    /// Multiplies each run of `chunk` of the `count` floats at `x` by the orthonormal
    /// Walsh-Hadamard matrix of that size (its own inverse); `chunk` a power of two dividing `count`.
    public static func hadamardRotate(_ x: UnsafeMutablePointer<Float>, count: Int, chunk: Int) {
        precondition(chunk > 0 && chunk & (chunk - 1) == 0 && count % chunk == 0)
        hk_hadamard_rotate(x, Int64(count), Int64(chunk))
    }

    /// `output[i] = silu(gate[i]) * up[i]`.
    public static func siluMul(gate: UnsafePointer<Float>, up: UnsafePointer<Float>,
                               output: UnsafeMutablePointer<Float>, count: Int, path: KernelPath = .best) {
        hk_silu_mul_f32(path.isa, gate, up, output, Int64(count))
    }

    /// One token of the gated delta rule for one head of `count` values over its state (S
    /// transposed, `count` × `count`): the state decays by `decay`, takes `key` → `value` with
    /// strength `beta`, and `output` is the state read with `query`, times `scale`.
    public static func gatedDeltaRule(state: UnsafeMutablePointer<Float>, query: UnsafePointer<Float>, key: UnsafePointer<Float>,
                                      value: UnsafePointer<Float>, decay: Float, beta: Float, scale: Float,
                                      output: UnsafeMutablePointer<Float>, count: Int, path: KernelPath = .best) {
        hk_gated_delta_rule(path.isa, state, query, key, value, decay, beta, scale, output, Int64(count))
    }

    /// One token of Mamba-2's selective scan for one head of `count` values over its state
    /// ((count, stateSize)): each row decays by `decay` and takes `b` times the value times
    /// `timeStep`, and `output` is each row read with `c`.
    public static func mamba2Scan(state: UnsafeMutablePointer<Float>, x: UnsafePointer<Float>, b: UnsafePointer<Float>,
                                  c: UnsafePointer<Float>, timeStep: Float, decay: Float, output: UnsafeMutablePointer<Float>,
                                  count: Int, stateSize: Int, path: KernelPath = .best) {
        hk_mamba2_scan(path.isa, state, x, b, c, timeStep, decay, output, Int64(count), Int64(stateSize))
    }

    /// `output[i] = gelu(gate[i]) * up[i]` (tanh GELU through a half-precision table).
    public static func geluMul(gate: UnsafePointer<Float>, up: UnsafePointer<Float>,
                               output: UnsafeMutablePointer<Float>, count: Int) {
        hk_geglu_f32(gate, up, output, Int64(count))
    }

    /// Rotates the first `dimensions` values of each of `heads` heads (`headDimension` floats
    /// apart) by one row's RoPE table of (cos, sin) pairs: pairs (2i, 2i+1) when `adjacent`,
    /// else (i, i + dimensions/2). Rounds as llama.cpp's compiled C does.
    public static func ropeRotate(_ x: UnsafeMutablePointer<Float>, heads: Int, headDimension: Int, dimensions: Int,
                                  table: UnsafePointer<Float>, adjacent: Bool, path: KernelPath = .best) {
        hk_rope_rotate(path.isa, x, Int64(heads), Int64(headDimension), Int64(dimensions), table, adjacent ? 1 : 0)
    }

    /// Softmax of `count` scores in place.
    public static func softmax(_ scores: UnsafeMutablePointer<Float>, count: Int, path: KernelPath = .best) {
        hk_softmax_f32(path.isa, scores, Int64(count), -.infinity)
    }

    /// Softmax of `count` values in place as llama.cpp's `ggml_soft_max` computes it for a row
    /// of any length (a mixture of experts' router); `softmax` is attention's.
    public static func softmaxRow(_ x: UnsafeMutablePointer<Float>, count: Int, path: KernelPath = .best) {
        hk_softmax_row_f32(path.isa, x, Int64(count))
    }

    /// e^x as the vectorised approximation computes it.
    public static func exp(_ x: Float) -> Float { hk_exp_approx(x) }

    /// The logistic sigmoid 1 / (1 + e^-x), with the C library's expf as ggml's CPU sigmoid has it.
    @inline(__always)
    public static func sigmoid(_ x: Float) -> Float { 1 / (1 + expf(-x)) }

    /// Floats to IEEE half precision, rounding to nearest even.
    public static func toHalf(_ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<UInt16>, count: Int,
                              path: KernelPath = .best) {
        hk_f32_to_f16_row(path.isa, x, y, Int64(count))
    }
}
