/// An IEEE 754 half-precision float kept as its bits, laid out like GGML's `ggml_half`.
///
/// Conversions are written out in integer arithmetic so they behave the same on every
/// platform (Swift's `Float16` is missing on Intel Macs).
public struct Half: Sendable, Hashable {
    /// The raw IEEE 754 binary16 bits.
    public var bits: UInt16

    /// A half from its raw bits.
    public init(bits: UInt16) { self.bits = bits }

    /// The nearest half to `value`, ties to even (what F16C's `vcvtps2ph` and GGML do).
    public init(_ value: Float) {
        var x = value.bitPattern
        let sign = UInt16(truncatingIfNeeded: (x >> 16) & 0x8000)
        x &= 0x7fff_ffff
        if x > 0x7f80_0000 {
            bits = sign | 0x7e00 | UInt16(truncatingIfNeeded: (x >> 13) & 0x3ff)
        } else if x >= 0x477f_f000 {
            bits = sign | 0x7c00
        } else if x >= 0x3880_0000 {
            x += 0xfff + ((x >> 13) & 1)
            bits = sign | UInt16(truncatingIfNeeded: (x - (112 << 23)) >> 13)
        } else {
            // Half subnormals count units of 2^-24; below 2^-25 everything rounds to zero.
            let e = x >> 23
            if e < 102 {
                bits = sign
            } else {
                let shift = 126 - e
                let m = (x & 0x7f_ffff) | 0x80_0000
                var q = m >> shift
                let rem = m & ((1 << shift) - 1), half = UInt32(1) << (shift - 1)
                if rem > half || (rem == half && q & 1 == 1) { q += 1 }
                bits = sign | UInt16(truncatingIfNeeded: q)
            }
        }
    }

    /// The value as a `Float` (exact: every half is a float).
    public var float: Float {
        let sign = UInt32(bits & 0x8000) << 16
        let exp = UInt32(bits >> 10) & 0x1f
        let man = UInt32(bits & 0x3ff)
        if exp == 0x1f { return Float(bitPattern: sign | 0x7f80_0000 | (man << 13)) }
        if exp != 0 { return Float(bitPattern: sign | ((exp + 112) << 23) | (man << 13)) }
        let v = Float(man) * 0x1p-24
        return sign != 0 ? -v : v
    }
}

/// A bfloat16 (the top 16 bits of a `Float`), laid out like GGML's `ggml_bf16_t`.
public struct BFloat16: Sendable, Hashable {
    /// The raw bits: sign, 8 exponent bits, 7 mantissa bits.
    public var bits: UInt16

    /// A bfloat16 from its raw bits.
    public init(bits: UInt16) { self.bits = bits }

    /// The nearest bfloat16 to `value`, ties to even; NaNs stay quiet NaNs.
    public init(_ value: Float) {
        let u = value.bitPattern
        if u & 0x7fff_ffff > 0x7f80_0000 {
            bits = UInt16(truncatingIfNeeded: u >> 16) | 0x40
        } else {
            bits = UInt16(truncatingIfNeeded: (u &+ (0x7fff + ((u >> 16) & 1))) >> 16)
        }
    }

    /// The value as a `Float` (exact).
    public var float: Float { Float(bitPattern: UInt32(bits) << 16) }
}
