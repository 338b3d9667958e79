/// The element types of GGML tensors, with the numbers GGUF files store for them.
///
/// Quantized types store weights in blocks: `blockSize` weights packed into `blockBytes` bytes.
public enum GGMLType: UInt32, Sendable, CaseIterable, Codable {
    case f32 = 0
    case f16 = 1
    case q4_0 = 2
    case q4_1 = 3
    case q5_0 = 6
    case q5_1 = 7
    case q8_0 = 8
    case q8_1 = 9
    case q2_K = 10
    case q3_K = 11
    case q4_K = 12
    case q5_K = 13
    case q6_K = 14
    case q8_K = 15
    case iq2_xxs = 16
    case iq2_xs = 17
    case iq3_xxs = 18
    case iq1_s = 19
    case iq4_nl = 20
    case iq3_s = 21
    case iq2_s = 22
    case iq4_xs = 23
    case i8 = 24
    case i16 = 25
    case i32 = 26
    case i64 = 27
    case f64 = 28
    case iq1_m = 29
    case bf16 = 30
    case tq1_0 = 34
    case tq2_0 = 35
    case mxfp4 = 39

    /// Weights per block (1 for plain scalar types).
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16, .i8, .i16, .i32, .i64, .f64: return 1
        case .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q8_1, .iq4_nl, .mxfp4: return 32
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_K, .iq2_xxs, .iq2_xs, .iq3_xxs, .iq1_s,
             .iq3_s, .iq2_s, .iq4_xs, .iq1_m, .tq1_0, .tq2_0:
            return 256
        }
    }

    /// Bytes per block.
    public var blockBytes: Int {
        switch self {
        case .f32, .i32: return 4
        case .f16, .bf16, .i16: return 2
        case .i8: return 1
        case .i64, .f64: return 8
        case .q4_0: return 18       // f16 d, 16 bytes of nibbles
        case .q4_1: return 20       // f16 d, f16 m, 16 bytes of nibbles
        case .q5_0: return 22       // f16 d, 4 bytes high bits, 16 bytes of nibbles
        case .q5_1: return 24       // f16 d, f16 m, 4 bytes high bits, 16 bytes of nibbles
        case .q8_0: return 34       // f16 d, 32 int8
        case .q8_1: return 36       // f16 d, f16 s, 32 int8
        case .q2_K: return 84
        case .q3_K: return 110
        case .q4_K: return 144      // f16 d, f16 dmin, 12 bytes scales, 128 bytes nibbles
        case .q5_K: return 176      // f16 d, f16 dmin, 12 bytes scales, 32 high bits, 128 nibbles
        case .q6_K: return 210      // 128 low nibbles, 64 high bits, 16 int8 scales, f16 d
        case .q8_K: return 292      // f32 d, 256 int8, 16 int16 block sums
        case .iq2_xxs: return 66
        case .iq2_xs: return 74
        case .iq3_xxs: return 98
        case .iq1_s: return 50
        case .iq4_nl: return 18
        case .iq3_s: return 110
        case .iq2_s: return 82
        case .iq4_xs: return 136
        case .iq1_m: return 56
        case .tq1_0: return 54
        case .tq2_0: return 66
        case .mxfp4: return 17
        }
    }

    /// The name GGML and llama.cpp use (`Q4_K`, `F16`, ...).
    public var name: String {
        switch self {
        case .f32: return "F32"
        case .f16: return "F16"
        case .bf16: return "BF16"
        case .f64: return "F64"
        case .i8: return "I8"
        case .i16: return "I16"
        case .i32: return "I32"
        case .i64: return "I64"
        case .mxfp4: return "MXFP4"
        default: return String(describing: self).uppercased()
        }
    }

    /// Bytes taken by `count` elements, or nil when `count` is not a whole number of blocks
    /// or the size does not fit in an `Int`.
    public func byteCount(elements count: Int) -> Int? {
        guard count >= 0, count % blockSize == 0 else { return nil }
        let (bytes, overflow) = (count / blockSize).multipliedReportingOverflow(by: blockBytes)
        return overflow ? nil : bytes
    }
}
