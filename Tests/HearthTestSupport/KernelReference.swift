import HearthCore
import HearthFormats
import HearthKernels

/// Plain scalar versions of every kernel, written for clarity rather than speed. The fast
/// paths are tested against these, and tests build quantized data with `quantize`; none of it
/// ships in the product.
public enum KernelReference {
    // MARK: Dequantize

    /// Floats from `count` elements of `type` stored at `src`.
    public static func dequantize(_ type: GGMLType, _ src: UnsafeRawPointer, count: Int) throws -> [Float] {
        guard count >= 0, count % type.blockSize == 0 else {
            throw HearthError.invalidArgument("\(count) is not a whole number of \(type.name) blocks (\(type.blockSize) elements each)")
        }
        let blocks = count / type.blockSize
        func block<B>(_ i: Int, _: B.Type) -> B {
            src.loadUnaligned(fromByteOffset: i * type.blockBytes, as: B.self)
        }
        var out: [Float] = []
        out.reserveCapacity(count)
        switch type {
        case .f32:
            for i in 0..<blocks { out.append(block(i, Float.self)) }
        case .f16:
            for i in 0..<blocks { out.append(block(i, Half.self).float) }
        case .bf16:
            for i in 0..<blocks { out.append(block(i, BFloat16.self).float) }
        case .q4_0:
            for i in 0..<blocks {
                let b = block(i, Q4_0Block.self)
                let q = nibbles32(tupleBytes(b.qs))
                for j in 0..<32 { out.append(Float(q[j] - 8) * b.d.float) }
            }
        case .q4_1:
            for i in 0..<blocks {
                let b = block(i, Q4_1Block.self)
                let q = nibbles32(tupleBytes(b.qs))
                for j in 0..<32 { out.append(Float(q[j]) * b.d.float + b.m.float) }
            }
        case .q5_0:
            for i in 0..<blocks {
                let b = block(i, Q5_0Block.self)
                let q = fiveBit32(tupleBytes(b.qs), tupleBytes(b.qh))
                for j in 0..<32 { out.append(Float(q[j] - 16) * b.d.float) }
            }
        case .q5_1:
            for i in 0..<blocks {
                let b = block(i, Q5_1Block.self)
                let q = fiveBit32(tupleBytes(b.qs), tupleBytes(b.qh))
                for j in 0..<32 { out.append(Float(q[j]) * b.d.float + b.m.float) }
            }
        case .q8_0:
            for i in 0..<blocks {
                let b = block(i, Q8_0Block.self)
                for q in tupleBytes(b.qs) { out.append(Float(Int8(bitPattern: q)) * b.d.float) }
            }
        case .q8_1:
            for i in 0..<blocks {
                let b = block(i, Q8_1Block.self)
                for q in tupleBytes(b.qs) { out.append(Float(Int8(bitPattern: q)) * b.d.float) }
            }
        case .q4_K, .q5_K:
            for i in 0..<blocks {
                let (d, dmin, packed, q) = type == .q4_K
                    ? { let b = block(i, Q4_KBlock.self); return (b.d.float, b.dmin.float, tupleBytes(b.scales), q4KQuants(b)) }()
                    : { let b = block(i, Q5_KBlock.self); return (b.d.float, b.dmin.float, tupleBytes(b.scales), q5KQuants(b)) }()
                for j in 0..<8 {
                    let (sc, m) = scaleMinK4(j, packed)
                    let d1 = d * Float(sc), m1 = dmin * Float(m)
                    for l in 0..<32 { out.append(d1 * Float(q[32 * j + l]) - m1) }
                }
            }
        case .q6_K:
            for i in 0..<blocks {
                let b = block(i, Q6_KBlock.self)
                let q = q6KQuants(b)
                let sc = tupleBytes(b.scales).map { Int8(bitPattern: $0) }
                for l in 0..<256 { out.append(b.d.float * Float(sc[l / 16]) * Float(q[l] - 32)) }
            }
        case .q8_K:
            for i in 0..<blocks {
                let b = block(i, Q8_KBlock.self)
                for q in tupleBytes(b.qs) { out.append(b.d * Float(Int8(bitPattern: q))) }
            }
        default:
            throw HearthError.unsupportedModel(reason: "no dequantizer for tensor type \(type.name)")
        }
        return out
    }

    /// Floats from `count` elements of `type` stored in `bytes`.
    public static func dequantize(_ type: GGMLType, _ bytes: [UInt8], count: Int) throws -> [Float] {
        guard let need = type.byteCount(elements: count), need <= bytes.count else {
            throw HearthError.invalidArgument("\(bytes.count) bytes do not hold \(count) \(type.name) elements")
        }
        return try bytes.withUnsafeBytes { try dequantize(type, $0.baseAddress!, count: count) }
    }

    /// The quants of a 32-element Q4 block: low nibbles are elements 0..<16, high nibbles 16..<32.
    static func nibbles32(_ qs: [UInt8]) -> [Int] {
        qs.map { Int($0 & 0x0F) } + qs.map { Int($0 >> 4) }
    }

    /// The 5-bit quants of a 32-element Q5 block: bit j of the little-endian qh is the fifth
    /// bit of element j.
    static func fiveBit32(_ qs: [UInt8], _ qh: [UInt8]) -> [Int] {
        let h = UInt32(qh[0]) | UInt32(qh[1]) << 8 | UInt32(qh[2]) << 16 | UInt32(qh[3]) << 24
        return nibbles32(qs).enumerated().map { j, q in q | Int((h >> UInt32(j)) & 1) << 4 }
    }

    /// Scale and minimum of sub-block `j` of a Q4_K/Q5_K block, 6 bits each in 12 bytes.
    static func scaleMinK4(_ j: Int, _ q: [UInt8]) -> (Int, Int) {
        if j < 4 { return (Int(q[j] & 63), Int(q[j + 4] & 63)) }
        return (Int(q[j + 4] & 0x0F) | Int(q[j - 4] >> 6) << 4, Int(q[j + 4] >> 4) | Int(q[j] >> 6) << 4)
    }

    static func q4KQuants(_ b: Q4_KBlock) -> [Int] {
        let qs = tupleBytes(b.qs)
        var q: [Int] = []
        for j in 0..<4 {
            q += qs[32 * j..<32 * j + 32].map { Int($0 & 0x0F) }
            q += qs[32 * j..<32 * j + 32].map { Int($0 >> 4) }
        }
        return q
    }

    static func q5KQuants(_ b: Q5_KBlock) -> [Int] {
        let qs = tupleBytes(b.qs), qh = tupleBytes(b.qh)
        var q: [Int] = []
        for j in 0..<4 {
            for l in 0..<32 { q.append(Int(qs[32 * j + l] & 0x0F) | Int((qh[l] >> (2 * j)) & 1) << 4) }
            for l in 0..<32 { q.append(Int(qs[32 * j + l] >> 4) | Int((qh[l] >> (2 * j + 1)) & 1) << 4) }
        }
        return q
    }

    /// The 6-bit quants (0..<64) of a Q6_K block in element order.
    static func q6KQuants(_ b: Q6_KBlock) -> [Int] {
        let ql = tupleBytes(b.ql), qh = tupleBytes(b.qh)
        var q = [Int](repeating: 0, count: 256)
        for half in 0..<2 {
            for l in 0..<32 {
                let lo0 = ql[64 * half + l], lo1 = ql[64 * half + l + 32], h = qh[32 * half + l]
                q[128 * half + l] = Int(lo0 & 0x0F) | Int(h & 3) << 4
                q[128 * half + l + 32] = Int(lo1 & 0x0F) | Int((h >> 2) & 3) << 4
                q[128 * half + l + 64] = Int(lo0 >> 4) | Int((h >> 4) & 3) << 4
                q[128 * half + l + 96] = Int(lo1 >> 4) | Int((h >> 6) & 3) << 4
            }
        }
        return q
    }

    // MARK: Quantize

    /// `x` quantized to `type` with GGML's rounding: `quantize_row_*_ref` for Q4_0, Q4_1, Q5_0,
    /// Q5_1 and Q8_K; for the activation formats Q8_0 and Q8_1, the x86 SIMD variant llama.cpp
    /// runs (multiplier 127/amax, ties to even); F32/F16/BF16 nearest, ties to even.
    public static func quantize(_ type: GGMLType, _ x: [Float]) throws -> [UInt8] {
        guard x.count % type.blockSize == 0 else {
            throw HearthError.invalidArgument("\(x.count) is not a whole number of \(type.name) blocks (\(type.blockSize) elements each)")
        }
        var out: [UInt8] = []
        func append<T>(_ value: T) { withUnsafeBytes(of: value) { out += $0 } }
        func half(_ v: Float) { append(Half(v).bits) }
        let blocks = stride(from: 0, to: x.count, by: type.blockSize).map { Array(x[$0..<$0 + type.blockSize]) }
        switch type {
        case .f32: for v in x { append(v) }
        case .f16: for v in x { half(v) }
        case .bf16: for v in x { append(BFloat16(v).bits) }
        case .q8_0, .q8_1:
            for v in blocks {
                let amax = v.reduce(Float(0)) { max($0, abs($1)) }
                // As llama.cpp's x86 quantize_row_q8_0/q8_1, which is what it runs on these CPUs:
                // 127 / amax as the multiplier, ties rounded to even.
                let d = amax / 127, id = amax != 0 ? 127 / amax : 0
                let q = v.map { Int8(($0 * id).rounded(.toNearestOrEven)) }
                half(d)
                if type == .q8_1 { half(Float(q.reduce(0) { $0 + Int($1) }) * d) }
                out += q.map { UInt8(bitPattern: $0) }
            }
        case .q4_0, .q5_0:
            let levels: Float = type == .q4_0 ? 8 : 16
            for v in blocks {
                var amax: Float = 0, maxv: Float = 0
                for e in v where amax < abs(e) { amax = abs(e); maxv = e }
                let d = maxv / -levels, id = d != 0 ? 1 / d : 0
                // GGML truncates x * id + levels + 0.5 toward zero.
                let q = v.map { min(Int(2 * levels - 1), Int($0 * id + (levels + 0.5))) }
                half(d)
                appendPacked(q, fiveBit: type == .q5_0, to: &out)
            }
        case .q4_1, .q5_1:
            let top: Float = type == .q4_1 ? 15 : 31
            for v in blocks {
                let lo = v.min()!, hi = v.max()!
                let d = (hi - lo) / top, id = d != 0 ? 1 / d : 0
                let q = v.map { min(Int(top), Int(($0 - lo) * id + 0.5)) }
                half(d)
                half(lo)
                appendPacked(q, fiveBit: type == .q5_1, to: &out)
            }
        case .q8_K:
            for v in blocks {
                var amax: Float = 0, maxv: Float = 0
                for e in v where abs(e) > amax { amax = abs(e); maxv = e }
                var q = [Int](repeating: 0, count: 256)
                var d: Float = 0
                if amax != 0 {
                    let iscale = -127 / maxv
                    q = v.map { min(127, Int(($0 * iscale).rounded(.toNearestOrEven))) }
                    d = 1 / iscale
                }
                append(d)
                out += q.map { UInt8(bitPattern: Int8($0)) }
                for g in 0..<16 { append(Int16(q[16 * g..<16 * g + 16].reduce(0, +))) }
            }
        default:
            throw HearthError.unsupportedModel(reason: "no reference quantizer for tensor type \(type.name)")
        }
        return out
    }

    /// Q4/Q5 packing: element j in the low nibble of byte j, element j + 16 in the high nibble;
    /// for Q5 the fifth bits go first, bit j of a little-endian UInt32 for element j.
    private static func appendPacked(_ q: [Int], fiveBit: Bool, to out: inout [UInt8]) {
        if fiveBit {
            var h: UInt32 = 0
            for j in 0..<32 { h |= UInt32((q[j] >> 4) & 1) << UInt32(j) }
            withUnsafeBytes(of: h.littleEndian) { out += $0 }
        }
        for j in 0..<16 { out.append(UInt8(q[j] & 0x0F) | UInt8(q[j + 16] & 0x0F) << 4) }
    }

    // MARK: Dot products

    /// Dot of one weight row with one activation row in `RowKernel.activationType(for: weightType)`,
    /// with integer sums per block (as GGML does) and the float total kept in `Double`.
    public static func dot(_ weightType: GGMLType, _ w: UnsafeRawPointer, _ a: UnsafeRawPointer, count: Int) throws -> Float {
        try dotWithMagnitude(weightType, w, a, count: count).value
    }

    /// `dot`, plus the sum of the absolute values of the terms it adds up: the scale against
    /// which a float implementation's rounding error is judged.
    public static func dotWithMagnitude(_ weightType: GGMLType, _ w: UnsafeRawPointer, _ a: UnsafeRawPointer,
                                        count: Int) throws -> (value: Float, magnitude: Double) {
        guard let aType = RowKernel.activationType(for: weightType) else {
            throw HearthError.unsupportedModel(reason: "no dot product for tensor type \(weightType.name)")
        }
        guard count % weightType.blockSize == 0, count % aType.blockSize == 0 else {
            throw HearthError.invalidArgument("\(count) is not a whole number of \(weightType.name) and \(aType.name) blocks")
        }
        switch weightType {
        case .f32, .f16, .bf16:
            let x = try dequantize(weightType, w, count: count)
            let y = aType == .f16 ? try dequantize(.f16, a, count: count) : Array(UnsafeBufferPointer(start: a.assumingMemoryBound(to: Float.self), count: count))
            var sum = 0.0, mag = 0.0
            for i in 0..<count {
                sum += Double(x[i]) * Double(y[i])
                mag += abs(Double(x[i]) * Double(y[i]))
            }
            return (Float(sum), mag)
        case .q4_0, .q4_1, .q5_0, .q5_1, .q8_0:
            var sum = 0.0, mag = 0.0
            for i in 0..<count / 32 {
                let (qx, dx, mx) = block32Quants(weightType, w + i * weightType.blockBytes)
                let ab = a + i * aType.blockBytes
                let dy = ab.loadUnaligned(as: Half.self).float
                let qy = (0..<32).map { Int(ab.loadUnaligned(fromByteOffset: (aType == .q8_1 ? 4 : 2) + $0, as: Int8.self)) }
                let sumi = zip(qx, qy).reduce(0) { $0 + $1.0 * $1.1 }
                sum += Double(dx) * Double(dy) * Double(sumi)
                mag += abs(Double(dx) * Double(dy)) * Double(zip(qx, qy).reduce(0) { $0 + abs($1.0 * $1.1) })
                if aType == .q8_1 {
                    let term = Double(mx) * Double(ab.loadUnaligned(fromByteOffset: 2, as: Half.self).float)
                    sum += term
                    mag += abs(term)
                }
            }
            return (Float(sum), mag)
        case .q4_K, .q5_K, .q6_K:
            var sum = 0.0, mag = 0.0
            for i in 0..<count / 256 {
                let yb = (a + i * aType.blockBytes).loadUnaligned(as: Q8_KBlock.self)
                let qy = tupleBytes(yb.qs).map { Int(Int8(bitPattern: $0)) }
                let wb = w + i * weightType.blockBytes
                if weightType == .q6_K {
                    let b = wb.loadUnaligned(as: Q6_KBlock.self)
                    let qx = q6KQuants(b)
                    let sc = tupleBytes(b.scales).map { Int(Int8(bitPattern: $0)) }
                    var sumi = 0, absi = 0
                    for l in 0..<256 {
                        sumi += sc[l / 16] * (qx[l] - 32) * qy[l]
                        absi += abs(sc[l / 16] * (qx[l] - 32) * qy[l])
                    }
                    sum += Double(b.d.float) * Double(yb.d) * Double(sumi)
                    mag += abs(Double(b.d.float) * Double(yb.d)) * Double(absi)
                } else {
                    let (d, dmin, packed, qx) = weightType == .q4_K
                        ? { let b = wb.loadUnaligned(as: Q4_KBlock.self); return (b.d.float, b.dmin.float, tupleBytes(b.scales), q4KQuants(b)) }()
                        : { let b = wb.loadUnaligned(as: Q5_KBlock.self); return (b.d.float, b.dmin.float, tupleBytes(b.scales), q5KQuants(b)) }()
                    var sumi = 0, summ = 0, absi = 0, absm = 0
                    for j in 0..<8 {
                        let (sc, m) = scaleMinK4(j, packed)
                        for l in 32 * j..<32 * j + 32 {
                            sumi += sc * qx[l] * qy[l]
                            summ += m * qy[l]
                            absi += abs(sc * qx[l] * qy[l])
                            absm += abs(m * qy[l])
                        }
                    }
                    sum += Double(yb.d) * (Double(d) * Double(sumi) - Double(dmin) * Double(summ))
                    mag += abs(Double(yb.d)) * (abs(Double(d)) * Double(absi) + abs(Double(dmin)) * Double(absm))
                }
            }
            return (Float(sum), mag)
        default:
            throw HearthError.unsupportedModel(reason: "no dot product for tensor type \(weightType.name)")
        }
    }

    /// Where a super-block dot product rounds to float. Its integer sums are exact in any
    /// order; the float result depends on which partial sums are converted and how they are
    /// accumulated. llama.cpp's x86 CPU backend (AVX2) uses one of these per weight type and
    /// batch size, and the AVX2 kernels reproduce it (see `RowKernel.matMul`).
    public enum SummationOrder: Sendable, CaseIterable {
        /// Q5_K and Q6_K, ggml_vec_dot_q*_K_q8_K: eight int32 lanes per super-block, lane m
        /// holding elements 4m..<4m+4 of every 32 (for Q6_K less 32 * scale * activation sum of
        /// the groups 2m and 2m + 1), each fused into its own float lane with d_a * d_w; the
        /// lanes are added at the end, ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)). Q5_K's mins
        /// are one integer per super-block fused into a separate total with d_a * dmin_w, and
        /// subtracted last.
        case lanes
        /// Q4_K repacked, one column (ggml_gemv_q4_K_8x8_q8_K): one integer per super-block
        /// for the scales and one for the mins, each fused into its own float accumulator with
        /// d_w * d_a and dmin_w * d_a; the result is their difference.
        case blocks
        /// Q4_K repacked, columns in fours (ggml_gemm_q4_K_8x8_q8_K): like `blocks`, with one
        /// integer (and one fused multiply-add) per 64 elements instead of per super-block.
        case pairs
        /// Q5_K and Q6_K batches of 8 or more (the tiled kernel): one integer per super-block
        /// multiplied by d_w, less dmin_w times the mins' integer (fused), then fused into the
        /// accumulator with d_a.
        case tiled
        /// F16 and F32 weights in a batch of two or more rows (tinyBLAS): one float lane per
        /// element index mod 8, each a chain of fused multiply-adds, added pairwise at the end,
        /// ((4 + 0) + (6 + 2)) + ((5 + 1) + (7 + 3)). (A lone row takes ggml_vec_dot's 32 slots,
        /// which `dot` of the kernel gives.)
        case floatLanes

        /// The weight types this order is defined for.
        public var weightTypes: [GGMLType] {
            switch self {
            case .lanes, .tiled: return [.q5_K, .q6_K]
            case .blocks, .pairs: return [.q4_K]
            case .floatLanes: return [.f16, .f32]
            }
        }
    }

    /// `dot` summed in `order`, rounding exactly where llama.cpp's kernel does; the weight type
    /// must be one of `order.weightTypes`.
    public static func dot(_ weightType: GGMLType, _ w: UnsafeRawPointer, _ a: UnsafeRawPointer, count: Int,
                           order: SummationOrder) throws -> Float {
        guard order.weightTypes.contains(weightType) else {
            throw HearthError.invalidArgument("summation order \(order) is not defined for \(weightType.name)")
        }
        if order == .floatLanes {
            let x = try dequantize(weightType, w, count: count)
            let y = weightType == .f16 ? try dequantize(.f16, a, count: count)
                                       : Array(UnsafeBufferPointer(start: a.assumingMemoryBound(to: Float.self), count: count))
            var lane = [Float](repeating: 0, count: 8)
            for i in 0..<count { lane[i % 8] = lane[i % 8].addingProduct(x[i], y[i]) }
            return ((lane[4] + lane[0]) + (lane[6] + lane[2])) + ((lane[5] + lane[1]) + (lane[7] + lane[3]))
        }
        guard count % 256 == 0 else {
            throw HearthError.invalidArgument("\(count) is not a whole number of \(weightType.name) blocks")
        }
        var lanes = [Float](repeating: 0, count: 8)
        var acc: Float = 0, accMin: Float = 0
        for i in 0..<count / 256 {
            let yb = (a + i * GGMLType.q8_K.blockBytes).loadUnaligned(as: Q8_KBlock.self)
            let qy = tupleBytes(yb.qs).map { Int(Int8(bitPattern: $0)) }
            let bsums: [Int] = withUnsafeBytes(of: yb.bsums) { raw in
                (0..<16).map { Int(raw.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) }
            }
            // Per element: scale, quant (unsigned), and the offset folded into the integer sum.
            let d: Float, dmin: Float, qx: [Int], scale: [Int], mins: [Int]
            let wb = w + i * weightType.blockBytes
            if weightType == .q6_K {
                let b = wb.loadUnaligned(as: Q6_KBlock.self)
                let sc = tupleBytes(b.scales).map { Int(Int8(bitPattern: $0)) }
                (d, dmin, qx, mins) = (b.d.float, 0, q6KQuants(b), [])
                scale = (0..<256).map { sc[$0 / 16] }
            } else {
                let (bd, bmin, packed, q) = weightType == .q4_K
                    ? { let b = wb.loadUnaligned(as: Q4_KBlock.self); return (b.d, b.dmin, tupleBytes(b.scales), q4KQuants(b)) }()
                    : { let b = wb.loadUnaligned(as: Q5_KBlock.self); return (b.d, b.dmin, tupleBytes(b.scales), q5KQuants(b)) }()
                (d, dmin, qx) = (bd.float, bmin.float, q)
                scale = (0..<256).map { scaleMinK4($0 / 32, packed).0 }
                mins = (0..<8).map { scaleMinK4($0, packed).1 }
            }
            // Integer sums over elements `range`, and of the mins of the 32-element sub-blocks in it.
            func sums(_ range: Range<Int>) -> (Int, Int) {
                var sumi = 0
                for l in range { sumi += scale[l] * (weightType == .q6_K ? qx[l] - 32 : qx[l]) * qy[l] }
                var summ = 0
                if weightType != .q6_K {
                    for j in range.lowerBound / 32..<range.upperBound / 32 { summ += mins[j] * (bsums[2 * j] + bsums[2 * j + 1]) }
                }
                return (sumi, summ)
            }
            switch order {
            case .lanes:
                for m in 0..<8 {
                    var lane = 0
                    if weightType == .q6_K {
                        let offset: Int = scale[32 * m] * bsums[2 * m] + scale[32 * m + 16] * bsums[2 * m + 1]
                        lane = -32 * offset
                    }
                    for chunk in 0..<8 {
                        let first = 32 * chunk + 4 * m
                        for l in first..<first + 4 { lane += scale[l] * qx[l] * qy[l] }
                    }
                    lanes[m] = lanes[m].addingProduct(yb.d * d, Float(lane))
                }
                accMin = accMin.addingProduct(yb.d * dmin, Float(sums(0..<256).1))
            case .tiled:
                let (sumi, summ) = sums(0..<256)
                acc = acc.addingProduct((d * Float(sumi)).addingProduct(-dmin, Float(summ)), yb.d)
            case .floatLanes:
                preconditionFailure("float orders return above")
            case .blocks, .pairs:
                let step = order == .pairs ? 64 : 256
                for first in stride(from: 0, to: 256, by: step) {
                    let (sumi, summ) = sums(first..<first + step)
                    acc = acc.addingProduct(Float(sumi), d * yb.d)
                    accMin = accMin.addingProduct(Float(summ), dmin * yb.d)
                }
            }
        }
        switch order {
        case .lanes:
            let even: Float = (lanes[0] + lanes[4]) + (lanes[2] + lanes[6])
            let odd: Float = (lanes[1] + lanes[5]) + (lanes[3] + lanes[7])
            return (even + odd) - accMin
        case .tiled, .floatLanes: return acc
        case .blocks, .pairs: return acc - accMin
        }
    }

    /// Signed quants (or unsigned ones plus a minimum), scale and minimum of a 32-element block.
    private static func block32Quants(_ type: GGMLType, _ p: UnsafeRawPointer) -> ([Int], Float, Float) {
        switch type {
        case .q4_0:
            let b = p.loadUnaligned(as: Q4_0Block.self)
            return (nibbles32(tupleBytes(b.qs)).map { $0 - 8 }, b.d.float, 0)
        case .q4_1:
            let b = p.loadUnaligned(as: Q4_1Block.self)
            return (nibbles32(tupleBytes(b.qs)), b.d.float, b.m.float)
        case .q5_0:
            let b = p.loadUnaligned(as: Q5_0Block.self)
            return (fiveBit32(tupleBytes(b.qs), tupleBytes(b.qh)).map { $0 - 16 }, b.d.float, 0)
        case .q5_1:
            let b = p.loadUnaligned(as: Q5_1Block.self)
            return (fiveBit32(tupleBytes(b.qs), tupleBytes(b.qh)), b.d.float, b.m.float)
        default:
            let b = p.loadUnaligned(as: Q8_0Block.self)
            return (tupleBytes(b.qs).map { Int(Int8(bitPattern: $0)) }, b.d.float, 0)
        }
    }
}

/// The bytes of a fixed-size tuple, in memory order.
private func tupleBytes<T>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}
