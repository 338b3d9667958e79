import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// Rotary position embedding (RoPE): each pair of a head's first `dimensions` values is rotated
/// by an angle that grows with the position, `theta_i = position * base^(-2i/d)`, so a query-key
/// product depends on how far apart the two positions are.
///
/// The variants in use: which values pair up (`Pairing`), per-frequency divisors (Llama 3's
/// `rope_freqs`, Phi-3's LongRoPE factors), linear position scaling (`frequencyScale`), YaRN's
/// blend of interpolated and extrapolated angles, and a magnitude factor on cos and sin
/// (`attentionFactor`). Angles follow llama.cpp's `ggml_rope_cache_init`, accumulated in float,
/// so the rounding is the same.
final class RotaryEmbedding: Sendable {
    /// Which values of a head rotate together.
    enum Pairing: Sendable {
        /// (x[2i], x[2i+1]): the llama GGUF layout, whose Q and K weights are permuted at conversion.
        case adjacent
        /// (x[i], x[i + d/2]): GPT-NeoX, Gemma, Qwen, Phi-3.
        case halves
    }

    /// YaRN's correction: dimensions below `low` keep extrapolated angles, above `high`
    /// interpolated ones, with a linear ramp between, mixed in by `factor`.
    struct YaRN: Sendable {
        var factor: Float
        var low: Float
        var high: Float
    }

    let dimensions: Int
    let base: Float
    let pairing: Pairing
    /// One divisor per rotated pair, or nil.
    let frequencyFactors: FloatBuffer?
    /// Multiplies every angle: 1 / the linear scaling factor.
    let frequencyScale: Float
    /// Multiplies cos and sin (YaRN's and LongRoPE's magnitude correction).
    let attentionFactor: Float
    let yarn: YaRN?

    init(dimensions: Int, base: Float, pairing: Pairing, frequencyFactors: FloatBuffer? = nil,
         frequencyScale: Float = 1, attentionFactor: Float = 1, yarn: YaRN? = nil) {
        precondition(frequencyFactors.map { $0.count == dimensions / 2 } ?? true)
        self.dimensions = dimensions
        self.base = base
        self.pairing = pairing
        self.frequencyFactors = frequencyFactors
        self.frequencyScale = frequencyScale
        self.attentionFactor = attentionFactor
        self.yarn = yarn
    }

    /// Floats of one row's table: a (cos, sin) pair per rotated pair.
    var tableWidth: Int { dimensions }

    /// Writes the (cos, sin) pairs for `position` into `table` (`tableWidth` floats).
    func fillTable(position: Int, into table: UnsafeMutablePointer<Float>) {
        let thetaScale = powf(base, -2.0 / Float(dimensions))
        var theta = Float(position)
        for i in 0..<dimensions / 2 {
            let extrapolated = frequencyFactors.map { theta / $0[i] } ?? theta
            var angle = frequencyScale * extrapolated
            var magnitude = attentionFactor
            if let yarn, yarn.factor != 0 {
                let y = (Float(i) - yarn.low) / max(0.001, yarn.high - yarn.low)
                let ramp = (1 - min(1, max(0, y))) * yarn.factor
                angle = angle * (1 - ramp) + extrapolated * ramp
                magnitude *= 1 + 0.1 * logf(1 / frequencyScale)
            }
            table[2 * i] = cosf(angle) * magnitude
            table[2 * i + 1] = sinf(angle) * magnitude
            theta *= thetaScale
        }
    }

    /// Rotates `heads` consecutive heads of `headDimension` floats at `x` by one row's table.
    func rotate(_ x: UnsafeMutablePointer<Float>, heads: Int, headDimension: Int, table: UnsafePointer<Float>) {
        Activations.ropeRotate(x, heads: heads, headDimension: headDimension, dimensions: dimensions, table: table,
                               adjacent: pairing == .adjacent)
    }
}

extension RotaryEmbedding {
    /// The RoPE a file describes for `c.architecture`, as llama.cpp reads it: `rope.freq_base`
    /// (or `base`), `rope.scaling.type` (none, linear or yarn) with `rope.scaling.factor` (or the
    /// old `rope.scale_linear`), `rope.scaling.attn_factor`, and the per-frequency divisors of
    /// `factors` when the file has that tensor (Llama 3's `rope_freqs.weight`). Other scaling
    /// types are refused by name.
    ///
    /// YaRN (`yarn`) interpolates the angles by the factor, keeps the fastest-turning pairs
    /// extrapolated with a ramp between (the pairs that turn more than 32 and fewer than once
    /// over `rope.scaling.original_context_length` positions, or the trained context), and
    /// scales cos and sin by 1 + 0.1 ln(factor), with llama.cpp's defaults and roundings (or, with
    /// `yarnKeys`, the file's `rope.scaling.yarn_beta_fast`, `yarn_beta_slow` and `yarn_log_multiplier`).
    /// `dimensions` overrides `c.ropeDimensions` (Gemma 4's sliding layers turn their own).
    static func read(_ gguf: GGUFFile, configuration c: ModelConfiguration, pairing: Pairing, base: Float? = nil,
                     factors: String? = "rope_freqs.weight", scaled: Bool = true, yarnKeys: Bool = false,
                     dimensions: Int? = nil) throws -> RotaryEmbedding {
        let a = c.architecture
        let dimensions = dimensions ?? c.ropeDimensions
        let type = gguf.string("\(a).rope.scaling.type") ?? "linear"
        guard type == "linear" || type == "none" || type == "yarn" else {
            throw HearthError.unsupportedModel(reason: "\(a) models with \(type) RoPE scaling")
        }
        let factor = gguf.float("\(a).rope.scaling.factor") ?? gguf.float("\(a).rope.scale_linear") ?? 0
        guard factor.isFinite, factor >= 0 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).rope.scaling.factor is \(factor)")
        }
        var attentionFactor = gguf.float("\(a).rope.scaling.attn_factor") ?? 1
        guard attentionFactor.isFinite, attentionFactor > 0 else {
            throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).rope.scaling.attn_factor is \(attentionFactor)")
        }
        let base = base ?? c.ropeBase
        let frequencyScale: Float = scaled && type != "none" && factor != 0 ? 1 / factor : 1
        var yarn: YaRN?
        if scaled && type == "yarn" {
            let original = gguf.int("\(a).rope.scaling.original_context_length") ?? c.contextLength
            guard original > 0 else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path, reason: "\(a).rope.scaling.original_context_length is \(original)")
            }
            // Only the families whose llama.cpp loader reads these keys (`yarnKeys`) take them.
            let betaFast = (yarnKeys ? gguf.float("\(a).rope.scaling.yarn_beta_fast") : nil) ?? 32
            let betaSlow = (yarnKeys ? gguf.float("\(a).rope.scaling.yarn_beta_slow") : nil) ?? 1
            let logMultiplier = (yarnKeys ? gguf.float("\(a).rope.scaling.yarn_log_multiplier") : nil) ?? 0
            guard betaFast.isFinite, betaFast > 0, betaSlow.isFinite, betaSlow > 0, logMultiplier.isFinite else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(a).rope.scaling YaRN betas \(betaFast), \(betaSlow) or log multiplier \(logMultiplier)")
            }
            yarn = YaRN(dimensions: dimensions, originalContext: original, base: base, betaFast: betaFast, betaSlow: betaSlow)
            // llama.cpp's magnitude: m(1) = 1 + 0.1 ln(factor) (1 for a factor up to 1), or, with a
            // log multiplier μ (`mscale_all_dim`), m(1) / m(μ) where m(μ) = 1 + 0.1 μ ln(factor);
            // divided by the 1 + 0.1 ln(factor) the rotation multiplies back in; each step rounded to float.
            let scale = 1 / frequencyScale
            func m(_ mscale: Float) -> Float { scale <= 1 ? 1 : 0.1 * mscale * logf(scale) + 1 }
            let magnitude = logMultiplier != 0 ? m(1) / m(logMultiplier) : m(1)
            attentionFactor = magnitude * (1 / (1 + 0.1 * logf(scale))) * attentionFactor
        }
        return RotaryEmbedding(
            dimensions: dimensions, base: base, pairing: pairing,
            frequencyFactors: try factors.flatMap { try loadOptionalVector(gguf, $0, count: dimensions / 2) },
            frequencyScale: frequencyScale, attentionFactor: attentionFactor, yarn: yarn)
    }
}

extension RotaryEmbedding.YaRN {
    /// YaRN with llama.cpp's defaults (extrapolation factor 1, β fast 32 and slow 1): the ramp
    /// runs over the pairs that turn between 32 times and once over `originalContext` positions
    /// (`ggml_rope_yarn_corr_dims`).
    init(dimensions: Int, originalContext: Int, base: Float, betaFast: Float = 32, betaSlow: Float = 1) {
        // (float)M_PI, rounded to nearest (Float.pi is rounded down).
        let pi = Float(Double.pi)
        func pair(turning rotations: Float) -> Float {
            Float(dimensions) * logf(Float(originalContext) / (rotations * 2 * pi)) / (2 * logf(base))
        }
        factor = 1
        low = max(0, floorf(pair(turning: betaFast)))
        high = min(Float(dimensions - 1), ceilf(pair(turning: betaSlow)))
    }
}

extension ForwardPass {
    /// `rope`'s table for every row of the pass, computed once per pass and shared by every
    /// layer that rotates with it: (rows, rope.tableWidth).
    func rotaryTable(_ rope: RotaryEmbedding) -> UnsafePointer<Float> {
        let key = ObjectIdentifier(rope)
        if let table = rotaryTables[key] { return UnsafePointer(table) }
        let width = rope.tableWidth
        let table = workspace.table(key, rows * width)
        for row in 0..<rows { rope.fillTable(position: positions[row], into: table + row * width) }
        rotaryTables[key] = table
        return UnsafePointer(table)
    }
}
