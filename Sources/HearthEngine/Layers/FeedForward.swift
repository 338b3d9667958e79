import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// The gating activation of a gated feed-forward network.
enum GatedActivation: Sendable {
    /// SwiGLU: `silu(gate) * up` (Llama, Qwen, Mistral, Phi-3).
    case silu
    /// GeGLU: `gelu(gate) * up`, tanh GELU (Gemma).
    case gelu
    /// gpt-oss's clamped SwiGLU: with x = min(gate, 7) and y = up clamped to ±7,
    /// `x σ(1.702 x) (y + 1)`, computed as ggml's `swiglu_oai`.
    case swigluOAI

    /// `output = act(gate) * up` over `count` values.
    func apply(gate: UnsafePointer<Float>, up: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .silu: Activations.siluMul(gate: gate, up: up, output: output, count: count)
        case .gelu: Activations.geluMul(gate: gate, up: up, output: output, count: count)
        case .swigluOAI:
            let alpha: Float = 1.702, limit: Float = 7
            for i in 0..<count {
                let x = gate[i] < limit ? gate[i] : limit
                let y = up[i] < -limit ? -limit : (limit < up[i] ? limit : up[i])
                output[i] = x / (1 + expf(alpha * -x)) * (y + 1)
            }
        }
    }
}

/// A gated feed-forward network: `down(act(gate(x)) * up(x))`, with gate and up as two matrices
/// or one fused matrix of both (Phi-3's `ffn_up`, gate first).
struct FeedForward: FeedForwardLayer {
    /// Gate and up: two (ffn, dim) matrices, or one (2 * ffn, dim) with the gate rows first.
    let gateUp: [WeightMatrix]
    let down: WeightMatrix          // (dim, ffn)
    let activation: GatedActivation
    let width: Int                  // ffn

    /// The feed-forward network of block `layer` (`blk.N.ffn_gate`, `ffn_up`, `ffn_down`; a fused
    /// `ffn_up` of twice the width when there is no `ffn_gate`).
    /// `suffix` and `width` name and size another network of the block (`_shexp`: a shared expert).
    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, activation: GatedActivation,
         suffix: String = "", width ffnWidth: Int? = nil) throws {
        let p = "blk.\(layer)."
        let dim = c.embeddingLength, ffn = ffnWidth ?? c.feedForwardLength
        if gguf.tensorInfo(named: p + "ffn_gate\(suffix).weight") != nil {
            gateUp = [try WeightMatrix(gguf, p + "ffn_gate\(suffix).weight", rows: ffn, columns: dim),
                      try WeightMatrix(gguf, p + "ffn_up\(suffix).weight", rows: ffn, columns: dim)]
        } else {
            gateUp = [try WeightMatrix(gguf, p + "ffn_up\(suffix).weight", rows: 2 * ffn, columns: dim)]
        }
        down = try WeightMatrix(gguf, p + "ffn_down\(suffix).weight", rows: dim, columns: ffn)
        self.activation = activation
        width = ffn
    }

    /// The network applied to every row of `input` ((rows, dim)); returns the block's output,
    /// (rows, dim) in `pass.blockOutput`.
    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let output = pass.blockOutput
        let n = pass.rows
        let dim = pass.configuration.embeddingLength
        let gateUpRows = pass.workspace.floats(.gateUp, n * 2 * width)
        let hidden = pass.workspace.floats(.hidden, n * width)
        pass.project(input, columns: dim, through: gateUp, into: gateUpRows, outputStride: 2 * width)
        pass.forEachRow(width: width) { row in
            let gate = gateUpRows + row * 2 * width
            activation.apply(gate: gate, up: gate + width, into: hidden + row * width, count: width)
        }
        pass.project(hidden, columns: width, through: [down], into: output, outputStride: dim)
        return output
    }
}

/// A feed-forward network that is not gated: `down(act(up(x)))`, GELU with the error function
/// fused into the first product (BERT, Whisper). Gated networks (SiLU, tanh GELU) are
/// `FeedForward`.
struct DenseFeedForward: @unchecked Sendable {
    /// (hidden, width), GELU applied to its outputs.
    let up: DenseMatrix
    /// (width, hidden).
    let down: DenseMatrix

    var hidden: Int { up.rows }
}

/// Routed experts beside a shared expert that every row goes through, its output scaled by the
/// sigmoid of a gate of its own (Qwen3-Next, Qwen3.5 MoE): `experts(x) + shared(x) · σ(g · x)`.
struct SharedExpertMixture: FeedForwardLayer {
    let experts: MixtureOfExperts
    let shared: FeedForward              // blk.N.ffn_{gate,up,down}_shexp
    let gate: WeightMatrix               // (1, dim) blk.N.ffn_gate_inp_shexp

    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, experts: MixtureOfExperts, sharedWidth: Int) throws {
        self.experts = experts
        shared = try FeedForward(gguf, layer: layer, configuration: c, activation: .silu, suffix: "_shexp", width: sharedWidth)
        gate = try WeightMatrix(gguf, "blk.\(layer).ffn_gate_inp_shexp.weight", rows: 1, columns: c.embeddingLength)
    }

    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let n = pass.rows, dim = pass.configuration.embeddingLength
        let routed = pass.workspace.floats(.projected, n * (dim + 1)), gates = routed + n * dim
        routed.update(from: experts(input, pass), count: n * dim)
        pass.project(input, columns: dim, through: [gate], into: gates, outputStride: 1)
        let output = shared(input, pass)
        for row in 0..<n {
            let g = Activations.sigmoid(gates[row])
            for j in 0..<dim { output[row * dim + j] = routed[row * dim + j] + output[row * dim + j] * g }
        }
        return output
    }
}

extension FeedForward {
    /// Refuses by name a file whose feed-forward networks have biases (`ffn_gate`, `ffn_up` or
    /// `ffn_down` in any block), which this network does not add.
    static func refuseBiases(_ gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        for layer in 0..<c.blockCount {
            for part in ["gate", "up", "down"] where gguf.tensorInfo(named: "blk.\(layer).ffn_\(part).bias") != nil {
                throw HearthError.unsupportedModel(reason: "\(c.architecture) models with feed-forward biases")
            }
        }
    }
}
