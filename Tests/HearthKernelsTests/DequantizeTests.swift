import HearthTestSupport
import HearthCore
import HearthFormats
import HearthKernels
import Testing

/// Little-endian bytes of a value.
private func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
private func half(_ v: Float) -> [UInt8] { le(Half(v).bits) }

/// Q4/Q5 nibble packing as GGML documents it: element j low nibble of byte j, j + 16 high.
private func packNibbles(_ q: [Int]) -> [UInt8] {
    (0..<16).map { UInt8(q[$0] & 0xF) | UInt8(q[$0 + 16] & 0xF) << 4 }
}

/// K-quant 6-bit scales and mins into 12 bytes (the inverse of GGML's get_scale_min_k4).
private func packScalesMins(_ sc: [Int], _ m: [Int]) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: 12)
    for j in 0..<4 {
        b[j] = UInt8(sc[j] | (sc[j + 4] >> 4) << 6)
        b[j + 4] = UInt8(m[j] | (m[j + 4] >> 4) << 6)
        b[j + 8] = UInt8((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4)
    }
    return b
}

/// Q4_K/Q5_K quant packing: in each 64 elements, the first 32 are low nibbles, the next 32
/// high nibbles of the same 32 bytes; fifth bits of chunk j are bits 2j and 2j + 1 of qh[l].
private func packK(_ q: [Int]) -> (qs: [UInt8], qh: [UInt8]) {
    var qs = [UInt8](repeating: 0, count: 128), qh = [UInt8](repeating: 0, count: 32)
    for j in 0..<4 {
        for l in 0..<32 {
            let a = q[64 * j + l], b = q[64 * j + 32 + l]
            qs[32 * j + l] = UInt8(a & 0xF) | UInt8(b & 0xF) << 4
            qh[l] |= UInt8((a >> 4) & 1) << (2 * j) | UInt8((b >> 4) & 1) << (2 * j + 1)
        }
    }
    return (qs, qh)
}

/// Q6_K packing: per 128 elements, ql holds low nibbles (elements l and l + 64 share byte l,
/// l + 32 and l + 96 share byte l + 32) and qh the top two bits of l, l + 32, l + 64, l + 96.
private func packQ6K(_ q: [Int]) -> (ql: [UInt8], qh: [UInt8]) {
    var ql = [UInt8](repeating: 0, count: 128), qh = [UInt8](repeating: 0, count: 64)
    for h in 0..<2 {
        for l in 0..<32 {
            let e = 128 * h + l
            ql[64 * h + l] = UInt8(q[e] & 0xF) | UInt8(q[e + 64] & 0xF) << 4
            ql[64 * h + l + 32] = UInt8(q[e + 32] & 0xF) | UInt8(q[e + 96] & 0xF) << 4
            qh[32 * h + l] = UInt8(q[e] >> 4) | UInt8(q[e + 32] >> 4) << 2 | UInt8(q[e + 64] >> 4) << 4
                | UInt8(q[e + 96] >> 4) << 6
        }
    }
    return (ql, qh)
}

/// A hand-built block (or row) of each type and the floats it must decode to.
private func knownBlock(_ type: GGMLType) -> (bytes: [UInt8], expected: [Float]) {
    let ramp = (0..<32).map { $0 < 16 ? $0 : 31 - $0 }  // 0...15, 15...0
    switch type {
    case .f32:
        let v: [Float] = [1, -2.5, 0x1p-126, 3e38]
        return (v.flatMap { le($0.bitPattern) }, v)
    case .f16:
        return ([0x3C00, 0xC000, 0x7BFF, 0x0001, 0x3555].flatMap { le(UInt16($0)) },
                [1, -2, 65504, 0x1p-24, 0.333251953125])
    case .bf16:
        return ([0x3F80, 0xC0A0, 0x4049].flatMap { le(UInt16($0)) }, [1, -5, 3.140625])
    case .q4_0:
        return (half(0.5) + packNibbles(ramp), ramp.map { Float($0 - 8) * 0.5 })
    case .q4_1:
        return (half(0.5) + half(-1) + packNibbles(ramp), ramp.map { Float($0) * 0.5 - 1 })
    case .q5_0, .q5_1:
        let q = (0..<32).map { ($0 * 7) % 32 }  // uses all five bits
        var qh: UInt32 = 0
        for j in 0..<32 { qh |= UInt32(q[j] >> 4) << UInt32(j) }
        if type == .q5_0 { return (half(0.25) + le(qh) + packNibbles(q), q.map { Float($0 - 16) * 0.25 }) }
        return (half(0.25) + half(2) + le(qh) + packNibbles(q), q.map { Float($0) * 0.25 + 2 })
    case .q8_0:
        return (half(0.25) + (0..<32).map { UInt8(bitPattern: Int8($0 - 16)) }, (0..<32).map { Float($0 - 16) * 0.25 })
    case .q4_K, .q5_K:
        let sc = [1, 2, 3, 63, 17, 5, 40, 33], m = [0, 4, 63, 1, 33, 48, 2, 16]
        let q = (0..<256).map { ($0 * 11) % (type == .q4_K ? 16 : 32) }
        let (qs, qh) = packK(q)
        let d: Float = 0.5, dmin: Float = 0.25
        let expected = (0..<256).map { d * Float(sc[$0 / 32]) * Float(q[$0]) - dmin * Float(m[$0 / 32]) }
        let head = half(d) + half(dmin) + packScalesMins(sc, m)
        return (type == .q4_K ? head + qs : head + qh + qs, expected)
    case .q6_K:
        let sc = (0..<16).map { $0 * 9 - 70 }  // negative and positive int8 scales
        let q = (0..<256).map { ($0 * 13) % 64 }
        let (ql, qh) = packQ6K(q)
        let d: Float = 0.125
        return (ql + qh + sc.map { UInt8(bitPattern: Int8($0)) } + half(d),
                (0..<256).map { d * Float(sc[$0 / 16]) * Float(q[$0] - 32) })
    case .q8_K:
        let qs = (0..<256).map { Int8(truncatingIfNeeded: $0 - 128) }
        let bsums = (0..<16).map { g in Int16(qs[16 * g..<16 * g + 16].reduce(0) { $0 + Int($1) }) }
        return (le(Float(-0.5).bitPattern) + qs.map { UInt8(bitPattern: $0) } + bsums.flatMap { le($0) },
                qs.map { -0.5 * Float($0) })
    default:
        return ([], [])
    }
}

@Suite struct DequantizeTests {
    static let types: [GGMLType] = weightTypes + [.q8_K]

    @Test(arguments: types)
    func referenceDecodesHandBuiltBlock(_ type: GGMLType) throws {
        let (bytes, expected) = knownBlock(type)
        #expect(bytes.count == type.byteCount(elements: expected.count))
        #expect(try KernelReference.dequantize(type, bytes, count: expected.count) == expected)
    }

    @Test func handBuiltQ4_1SpotValues() throws {
        let (bytes, _) = knownBlock(.q4_1)
        let x = try KernelReference.dequantize(.q4_1, bytes, count: 32)
        #expect(Array(x[0..<3]) == [-1, -0.5, 0])
        #expect(x[15] == 6.5 && x[16] == 6.5 && x[31] == -1)
    }

    @Test(arguments: types, KernelPath.allCases)
    func kernelsDecodeHandBuiltBlock(_ type: GGMLType, _ path: KernelPath) throws {
        let (bytes, expected) = knownBlock(type)
        var out = [Float](repeating: .nan, count: expected.count)
        try bytes.withUnsafeBytes { src in
            try out.withUnsafeMutableBufferPointer {
                try dequantizeRow(type, src.baseAddress!, into: $0.baseAddress!, count: expected.count, path: path)
            }
        }
        #expect(out == expected)
    }

    /// Fast and portable dequantization equal the reference exactly: the same float operations
    /// in the same order.
    @Test(arguments: types, KernelPath.allCases)
    func kernelsEqualReferenceOnRandomRows(_ type: GGMLType, _ path: KernelPath) throws {
        var rng = SeededGenerator(seed: 42 &+ UInt64(type.rawValue))
        for count in testCounts(type) + (type.blockSize == 1 ? [3, 9, 17] : []) {
            let row = randomRow(type, count: count, using: &rng)
            let expected = try KernelReference.dequantize(type, row, count: count)
            var out = [Float](repeating: .nan, count: count)
            try row.withUnsafeBytes { src in
                try out.withUnsafeMutableBufferPointer {
                    try dequantizeRow(type, src.baseAddress!, into: $0.baseAddress!, count: count, path: path)
                }
            }
            #expect(out.map(\.bitPattern) == expected.map(\.bitPattern), "\(type.name) count \(count)")
        }
    }

    @Test func rejectsUnsupportedTypesAndPartialBlocks() {
        var out = [Float](repeating: 0, count: 256)
        let src = [UInt8](repeating: 0, count: 256)
        src.withUnsafeBytes { s in
            out.withUnsafeMutableBufferPointer { o in
                #expect(throws: HearthError.self) { try dequantizeRow(.tq1_0, s.baseAddress!, into: o.baseAddress!, count: 256) }
                #expect(throws: HearthError.self) { try dequantizeRow(.q4_0, s.baseAddress!, into: o.baseAddress!, count: 33) }
            }
        }
        #expect(throws: HearthError.self) { try RowKernel(weightType: .tq1_0) }
    }
}
