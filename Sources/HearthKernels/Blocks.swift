import HearthFormats

// Swift mirrors of GGML's block structs (ggml-common.h). Fixed-size arrays are tuples so the
// layout matches C byte for byte; `MemoryLayout<Block>.size == GGMLType.blockBytes` is tested.

/// 4 bytes, laid out inline.
public typealias Bytes4 = (UInt8, UInt8, UInt8, UInt8)
/// 8 bytes, laid out inline.
public typealias Bytes8 = (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
/// 12 bytes, laid out inline.
public typealias Bytes12 = (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
/// 16 bytes, laid out inline.
public typealias Bytes16 = (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)
/// 32 bytes, laid out inline.
public typealias Bytes32 = (Bytes16, Bytes16)
/// 64 bytes, laid out inline.
public typealias Bytes64 = (Bytes32, Bytes32)
/// 128 bytes, laid out inline.
public typealias Bytes128 = (Bytes64, Bytes64)
/// 256 bytes, laid out inline.
public typealias Bytes256 = (Bytes128, Bytes128)
/// 16 int16 values, laid out inline.
public typealias Int16x16 = (Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16)

/// A block of one GGML tensor type: `ggmlType.blockSize` weights in `ggmlType.blockBytes` bytes.
public protocol GGMLBlock: Sendable {
    /// The tensor type this block belongs to.
    static var ggmlType: GGMLType { get }
}

/// Q4_0: 32 weights, w = d * (q - 8) with 4-bit q; element j in the low nibble of qs[j],
/// element j + 16 in the high nibble. 18 bytes: 4.5 bits per weight.
public struct Q4_0Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q4_0 }
    /// Scale.
    public var d: Half
    /// Packed nibbles.
    public var qs: Bytes16
}

/// Q4_1: 32 weights, w = d * q + m with 4-bit q, nibbles as in Q4_0. 20 bytes: 5 bits per weight.
public struct Q4_1Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q4_1 }
    /// Scale.
    public var d: Half
    /// Minimum (offset added to every weight).
    public var m: Half
    /// Packed nibbles.
    public var qs: Bytes16
}

/// Q5_0: 32 weights, w = d * (q - 16) with 5-bit q; nibbles as in Q4_0, the fifth bit of
/// element j is bit j of the little-endian 32-bit qh. 22 bytes: 5.5 bits per weight.
public struct Q5_0Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q5_0 }
    /// Scale.
    public var d: Half
    /// Fifth bits.
    public var qh: Bytes4
    /// Packed low nibbles.
    public var qs: Bytes16
}

/// Q5_1: 32 weights, w = d * q + m with 5-bit q laid out as in Q5_0. 24 bytes: 6 bits per weight.
public struct Q5_1Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q5_1 }
    /// Scale.
    public var d: Half
    /// Minimum.
    public var m: Half
    /// Fifth bits.
    public var qh: Bytes4
    /// Packed low nibbles.
    public var qs: Bytes16
}

/// Q8_0: 32 weights, w = d * q with int8 q. 34 bytes: 8.5 bits per weight.
public struct Q8_0Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q8_0 }
    /// Scale.
    public var d: Half
    /// Quants (int8 bit patterns).
    public var qs: Bytes32
}

/// Q8_1: 32 activations, x = d * q with int8 q, and s = d * sum(q). 36 bytes: 9 bits per value.
public struct Q8_1Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q8_1 }
    /// Scale.
    public var d: Half
    /// d times the sum of the quants.
    public var s: Half
    /// Quants (int8 bit patterns).
    public var qs: Bytes32
}

/// Q4_K: 256 weights in 8 sub-blocks of 32, w = d * sc[j] * q - dmin * m[j] with 4-bit q and
/// 6-bit sc, m packed in `scales`. Each 32 bytes of qs hold sub-block 2i (low nibbles) and
/// 2i + 1 (high nibbles). 144 bytes: 4.5 bits per weight.
public struct Q4_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q4_K }
    /// Super-block scale of the sub-block scales.
    public var d: Half
    /// Super-block scale of the sub-block minimums.
    public var dmin: Half
    /// Eight 6-bit scales and eight 6-bit minimums.
    public var scales: Bytes12
    /// Packed nibbles.
    public var qs: Bytes128
}

/// Q5_K: Q4_K plus a fifth bit per weight: bit 2i of qh[l] belongs to element 64i + l, bit
/// 2i + 1 to element 64i + 32 + l. 176 bytes: 5.5 bits per weight.
public struct Q5_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q5_K }
    /// Super-block scale of the sub-block scales.
    public var d: Half
    /// Super-block scale of the sub-block minimums.
    public var dmin: Half
    /// Eight 6-bit scales and eight 6-bit minimums.
    public var scales: Bytes12
    /// Fifth bits.
    public var qh: Bytes32
    /// Packed low nibbles.
    public var qs: Bytes128
}

/// Q6_K: 256 weights in 16 sub-blocks of 16, w = d * sc[j] * (q - 32) with 6-bit q (4 low bits
/// in ql, 2 high bits in qh) and int8 sc. 210 bytes: 6.5625 bits per weight.
public struct Q6_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q6_K }
    /// Low 4 bits of the quants.
    public var ql: Bytes128
    /// High 2 bits of the quants.
    public var qh: Bytes64
    /// Sub-block scales (int8 bit patterns).
    public var scales: Bytes16
    /// Super-block scale.
    public var d: Half
}

/// Q8_K: 256 activations, x = d * q with int8 q, plus the sum of each 16 quants (used to apply
/// the weights' offsets). 292 bytes: 9.125 bits per value.
public struct Q8_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q8_K }
    /// Scale (a full float, and may be negative).
    public var d: Float
    /// Quants (int8 bit patterns).
    public var qs: Bytes256
    /// Sums of each 16 consecutive quants.
    public var bsums: Int16x16
}

/// Q2_K: 256 weights in 16 sub-blocks of 16, w = d * sc[j] * q - dmin * m[j] with 2-bit q and
/// 4-bit sc (low nibble of scales[j]) and m (high nibble). Bits 2s..2s+1 of qs[32i + l] hold
/// element 128i + 32s + l. 84 bytes: 2.625 bits per weight.
public struct Q2_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q2_K }
    /// Sub-block scales (low nibbles) and minimums (high nibbles).
    public var scales: Bytes16
    /// Packed 2-bit quants.
    public var qs: Bytes64
    /// Super-block scale of the sub-block scales.
    public var d: Half
    /// Super-block scale of the sub-block minimums.
    public var dmin: Half
}

/// Q3_K: 256 weights in 16 sub-blocks of 16, w = d * (sc[j] - 32) * (q - 4) with 3-bit q: its
/// low two bits laid out as Q2_K's, its high bit (4 when set) bit 4i + s of hmask[l] for element
/// 128i + 32s + l; the 6-bit sc packed in `scales`. 110 bytes: 3.4375 bits per weight.
public struct Q3_KBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .q3_K }
    /// High bits of the quants.
    public var hmask: Bytes32
    /// Low two bits of the quants.
    public var qs: Bytes64
    /// Sixteen 6-bit scales.
    public var scales: Bytes12
    /// Super-block scale.
    public var d: Half
}

/// IQ4_NL: 32 weights, w = d * v[q] with 4-bit q into a fixed table of 16 non-uniform values
/// (-127 ... 113), nibbles as in Q4_0. 18 bytes: 4.5 bits per weight.
public struct IQ4_NLBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq4_nl }
    /// Scale.
    public var d: Half
    /// Packed nibbles.
    public var qs: Bytes16
}

/// IQ4_XS: 256 weights in 8 sub-blocks of 32, w = d * (ls[j] - 32) * v[q] with IQ4_NL's values
/// and 6-bit ls (low four bits in scales_l, high two in scales_h); each sub-block's nibbles as
/// in Q4_0. 136 bytes: 4.25 bits per weight.
public struct IQ4_XSBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq4_xs }
    /// Super-block scale.
    public var d: Half
    /// High two bits of the eight sub-block scales.
    public var scalesHigh: UInt16
    /// Low four bits of the sub-block scales, two to a byte.
    public var scalesLow: Bytes4
    /// Packed nibbles.
    public var qs: Bytes128
}

/// IQ2_XXS: 256 weights in groups of 8, each group a point of a fixed grid (magnitudes 8, 25 or
/// 43) with its signs: per 32 weights two little-endian words, the first the grid indices of its
/// four groups, the second four 7-bit sign indices and a 4-bit scale ls (bits 28..31);
/// w = d * (ls + 1/2) / 4 * g. 66 bytes: 2.0625 bits per weight.
public struct IQ2_XXSBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq2_xxs }
    /// Super-block scale.
    public var d: Half
    /// Grid indices, sign indices and scales (32 little-endian UInt16).
    public var qs: Bytes64
}

/// IQ2_XS: 256 weights in groups of 8, each a 9-bit grid index and a 7-bit sign index in one
/// 16-bit word, with 4-bit scales per 16 weights; w = d * (ls + 1/2) / 4 * g. 74 bytes: 2.3125
/// bits per weight.
public struct IQ2_XSBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq2_xs }
    /// Super-block scale.
    public var d: Half
    /// Grid and sign indices (32 little-endian UInt16).
    public var qs: Bytes64
    /// Scales of each 16 weights, two to a byte (low nibble first).
    public var scales: Bytes8
}

/// IQ2_S: 256 weights in groups of 8, each a 10-bit index into a grid of 1024 points (its low
/// 8 bits in qs, the top 2 in qh) and a byte of signs; 4-bit scales per 16 weights;
/// w = d * (ls + 1/2) / 4 * g. 82 bytes: 2.5625 bits per weight.
public struct IQ2_SBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq2_s }
    /// Super-block scale.
    public var d: Half
    /// Low 8 bits of the 32 grid indices, then the 32 groups' sign bytes.
    public var qs: Bytes64
    /// Top 2 bits of the grid indices, four to a byte.
    public var qh: Bytes8
    /// Scales of each 16 weights, two to a byte (low nibble first).
    public var scales: Bytes8
}

/// IQ3_XXS: 256 weights in groups of 4, each a point of a grid of 256 (magnitudes 4 ... 62); per
/// 32 weights a little-endian word of four 7-bit sign indices (one per 8 weights) and a 4-bit
/// scale; w = d * (ls + 1/2) / 2 * g. 98 bytes: 3.0625 bits per weight.
public struct IQ3_XXSBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq3_xxs }
    /// Super-block scale.
    public var d: Half
    /// The 64 grid indices.
    public var qs: Bytes64
    /// Sign indices and scales, a little-endian UInt32 per 32 weights.
    public var scalesAndSigns: Bytes32
}

/// IQ3_S: 256 weights in groups of 4, each a 9-bit index into a grid of 512 (magnitudes 1 ... 15;
/// the ninth bits in qh), 8 signs to a byte, and a 4-bit scale per 32 weights;
/// w = d * (2 ls + 1) * g. 110 bytes: 3.4375 bits per weight.
public struct IQ3_SBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq3_s }
    /// Super-block scale.
    public var d: Half
    /// Low 8 bits of the grid indices.
    public var qs: Bytes64
    /// Ninth bits of the grid indices, eight to a byte.
    public var qh: Bytes8
    /// Signs, one bit per weight.
    public var signs: Bytes32
    /// Scales of each 32 weights, two to a byte (low nibble first).
    public var scales: Bytes4
}

/// IQ1_S: 256 weights in groups of 8, each an 11-bit index into a grid of 2048 points of values
/// -1, 0, +1; per 32 weights a little-endian word of the indices' top 3 bits (bits 0..11), a
/// 3-bit scale (12..14) and the sign of a shift (15): w = d * (2 ls + 1) * (g ± 1/8). 50 bytes:
/// 1.5625 bits per weight.
public struct IQ1_SBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq1_s }
    /// Super-block scale.
    public var d: Half
    /// Low 8 bits of the grid indices.
    public var qs: Bytes32
    /// Top bits, scales and shifts (8 little-endian UInt16).
    public var qh: Bytes16
}

/// IQ1_M: IQ1_S's grid with the top 3 bits of each index and the sign of its group's shift in a
/// nibble of qh, 3-bit scales per 16 weights, and the f16 super-block scale split over the top
/// nibbles of the four little-endian words of `scales`. 56 bytes: 1.75 bits per weight.
public struct IQ1_MBlock: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .iq1_m }
    /// Low 8 bits of the grid indices.
    public var qs: Bytes32
    /// Top 3 bits of the grid indices and the shifts' signs, a nibble per group of 8.
    public var qh: Bytes16
    /// Scales of each 16 weights (3 bits each, low bits first) and the super-block scale.
    public var scales: Bytes8
}

/// MXFP4: 32 weights, w = 2^(e - 128) * v[q] with 4-bit q into the FP4 (E2M1) values doubled
/// (0, ±1, ±2, ±3, ±4, ±6, ±8, ±12) and an E8M0 exponent e, nibbles as in Q4_0. 17 bytes: 4.25
/// bits per weight.
public struct MXFP4Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .mxfp4 }
    /// The shared exponent (E8M0).
    public var e: UInt8
    /// Packed nibbles.
    public var qs: Bytes16
}

/// F32: one weight per "block". 32 bits per weight.
public struct F32Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .f32 }
    /// The weight.
    public var value: Float
}

/// F16: one weight per "block". 16 bits per weight.
public struct F16Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .f16 }
    /// The weight.
    public var value: Half
}

/// BF16: one weight per "block". 16 bits per weight.
public struct BF16Block: GGMLBlock {
    /// Type of the block.
    public static var ggmlType: GGMLType { .bf16 }
    /// The weight.
    public var value: BFloat16
}

extension GGMLType {
    /// The Swift block struct of this type, when HearthKernels implements it.
    public var blockStruct: (any GGMLBlock.Type)? {
        switch self {
        case .f32: return F32Block.self
        case .f16: return F16Block.self
        case .bf16: return BF16Block.self
        case .q4_0: return Q4_0Block.self
        case .q4_1: return Q4_1Block.self
        case .q5_0: return Q5_0Block.self
        case .q5_1: return Q5_1Block.self
        case .q8_0: return Q8_0Block.self
        case .q8_1: return Q8_1Block.self
        case .q4_K: return Q4_KBlock.self
        case .q5_K: return Q5_KBlock.self
        case .q6_K: return Q6_KBlock.self
        case .q8_K: return Q8_KBlock.self
        case .q2_K: return Q2_KBlock.self
        case .q3_K: return Q3_KBlock.self
        case .iq4_nl: return IQ4_NLBlock.self
        case .iq4_xs: return IQ4_XSBlock.self
        case .iq2_xxs: return IQ2_XXSBlock.self
        case .iq2_xs: return IQ2_XSBlock.self
        case .iq2_s: return IQ2_SBlock.self
        case .iq3_xxs: return IQ3_XXSBlock.self
        case .iq3_s: return IQ3_SBlock.self
        case .iq1_s: return IQ1_SBlock.self
        case .iq1_m: return IQ1_MBlock.self
        case .mxfp4: return MXFP4Block.self
        default: return nil
        }
    }
}
