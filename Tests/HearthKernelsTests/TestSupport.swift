import HearthFormats
import HearthKernels
import HearthTestSupport

typealias SeededGenerator = SplitMix64

/// Weight types with a dot-product kernel.
let weightTypes: [GGMLType] = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q4_K, .q5_K, .q6_K]

/// Byte offsets of the f16 scale fields in one block of a quantized type.
func halfFieldOffsets(_ type: GGMLType) -> [Int] {
    switch type {
    case .q4_0, .q5_0, .q8_0: return [0]
    case .q4_1, .q5_1, .q4_K, .q5_K: return [0, 2]
    case .q6_K: return [208]
    case .q2_K: return [80, 82]
    case .q3_K: return [108]
    case .iq4_nl, .iq4_xs, .iq2_xxs, .iq2_xs, .iq2_s, .iq3_xxs, .iq3_s, .iq1_s: return [0]
    default: return []
    }
}

/// Random bytes for `count` elements of `type`, with every scale a sane half (magnitude
/// 0.0005 to 0.05, either sign) and float types holding values in -1...1.
func randomRow(_ type: GGMLType, count: Int, using rng: inout SeededGenerator) -> [UInt8] {
    func bytes<T>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v) { Array($0) } }
    switch type {
    case .f32: return (0..<count).flatMap { _ in bytes(Float.random(in: -1...1, using: &rng)) }
    case .f16: return (0..<count).flatMap { _ in bytes(Half(Float.random(in: -1...1, using: &rng)).bits) }
    case .bf16: return (0..<count).flatMap { _ in bytes(BFloat16(Float.random(in: -1...1, using: &rng)).bits) }
    default: break
    }
    let blocks = count / type.blockSize
    var row = (0..<blocks * type.blockBytes).map { _ in UInt8.random(in: 0...255, using: &rng) }
    for b in 0..<blocks {
        // MXFP4's shared exponent: scales of 2^-12 to 2^-1.
        if type == .mxfp4 { row[b * type.blockBytes] = UInt8.random(in: 116...127, using: &rng) }
        // IQ1_M's f16 scale, a nibble at the top of each of the four words at bytes 48..55.
        if type == .iq1_m {
            let sign: Float = Bool.random(using: &rng) ? 1 : -1
            let h = Half(sign * Float.random(in: 0.0005...0.05, using: &rng)).bits
            for k in 0..<4 {
                let top = b * type.blockBytes + 48 + 2 * k + 1
                row[top] = (row[top] & 0x0F) | UInt8((h >> (4 * k)) & 0xF) << 4
            }
        }
        for offset in halfFieldOffsets(type) {
            let sign: Float = Bool.random(using: &rng) ? 1 : -1
            let h = Half(sign * Float.random(in: 0.0005...0.05, using: &rng)).bits
            row[b * type.blockBytes + offset] = UInt8(h & 0xFF)
            row[b * type.blockBytes + offset + 1] = UInt8(h >> 8)
        }
    }
    return row
}

/// Random activations in -amplitude...amplitude.
func randomFloats(_ count: Int, amplitude: Float = 1, using rng: inout SeededGenerator) -> [Float] {
    (0..<count).map { _ in Float.random(in: -amplitude...amplitude, using: &rng) }
}

/// Element counts with odd numbers of blocks for a weight type.
func testCounts(_ type: GGMLType) -> [Int] {
    switch type.blockSize {
    case 1: return [1, 7, 33, 100, 576]
    case 32: return [32, 96, 224, 544, 1536]
    default: return [256, 768, 1280]
    }
}
