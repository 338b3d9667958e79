import HearthTestSupport
import HearthFormats
import HearthKernels
import Testing

@Suite struct QuantizeTests {
    /// A row with exact rounding ties: amax 127 makes the scale 1 (Q8_0/Q8_1) or -1 (Q8_K).
    static func tieRow(_ count: Int) -> [Float] {
        (0..<count).map { i in
            if i % 32 == 0 { return i % 64 == 0 ? 127 : -127 }
            return Float(i % 31) - 15.5 + (i % 3 == 0 ? 0.25 : 0)
        }
    }

    /// The C quantizers (both paths) produce the reference's bytes exactly.
    @Test(arguments: [GGMLType.q8_0, .q8_1, .q8_K, .f32], KernelPath.allCases)
    func activationQuantizersEqualReference(_ type: GGMLType, _ path: KernelPath) throws {
        let weight: GGMLType = [.q8_0: .q8_0, .q8_1: .q4_1, .q8_K: .q4_K, .f32: .f32][type]!
        let kernel = try RowKernel(weightType: weight, path: path)
        #expect(kernel.activationType == type)
        var rng = SeededGenerator(seed: 7)
        let rows: [[Float]] = [
            randomFloats(768, using: &rng), randomFloats(256, amplitude: 1e-3, using: &rng),
            Self.tieRow(512), [Float](repeating: 0, count: 256),
            (0..<256).map { Float($0 % 5) * 1e4 - 2e4 },
        ]
        for x in rows {
            let expected = try KernelReference.quantize(type, x)
            var out = [UInt8](repeating: 0xAB, count: kernel.activationBytes(count: x.count))
            #expect(out.count == expected.count)
            x.withUnsafeBufferPointer { xp in
                out.withUnsafeMutableBytes { kernel.quantizeActivations(xp.baseAddress!, into: $0.baseAddress!, count: x.count) }
            }
            #expect(out == expected, "\(type.name), \(x.count) elements")
        }
    }

    @Test func q8_1SumIsScaleTimesQuantSum() throws {
        var rng = SeededGenerator(seed: 3)
        let x = randomFloats(64, using: &rng)
        let bytes = try KernelReference.quantize(.q8_1, x)
        for b in 0..<2 {
            let block = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 36 * b, as: Q8_1Block.self) }
            let sum = withUnsafeBytes(of: block.qs) { $0.reduce(0) { $0 + Int(Int8(bitPattern: $1)) } }
            // s uses the float scale, before it is rounded to f16.
            let d = x[32 * b..<32 * b + 32].map(abs).max()! / 127
            #expect(block.d == Half(d))
            #expect(block.s == Half(Float(sum) * d))
        }
    }

    @Test func q8_KTiesRoundToEven() throws {
        var x = [Float](repeating: 0, count: 256)
        x[0] = 127  // iscale = -127 / 127, so d = -1
        x[1] = 2.5
        x[2] = -3.5
        x[3] = 0.5
        let q = try KernelReference.quantize(.q8_K, x)
        #expect(q[0..<4] == [0x00, 0x00, 0x80, 0xBF])  // d = -1.0
        #expect(q[4..<8].map { Int8(bitPattern: $0) } == [-127, -2, 4, 0])
    }

    /// Round-trip error bounds. Q8_0: half a step plus the f16 rounding of d (d = amax/127).
    /// Q4_0: one step at most (the value opposite the extreme clamps from 16 to 15; d = amax/8).
    /// Q4_1: half a step plus f16 rounding of d and m (d = (max - min)/15).
    @Test(arguments: [GGMLType.q8_0, .q4_0, .q4_1, .q5_0, .q5_1])
    func roundTripErrorIsBounded(_ type: GGMLType) throws {
        var rng = SeededGenerator(seed: 11)
        let x = randomFloats(32 * 64, amplitude: 3, using: &rng)
        let y = try KernelReference.dequantize(type, try KernelReference.quantize(type, x), count: x.count)
        for b in 0..<64 {
            let v = x[32 * b..<32 * b + 32]
            let amax = v.map(abs).max()!, lo = v.min()!, hi = v.max()!
            let bound: Float
            switch type {
            case .q8_0: bound = 0.51 * amax / 127 + 127 * (amax / 127) * 0x1p-11
            case .q4_0: bound = 1.01 * amax / 8
            case .q5_0: bound = 1.01 * amax / 16
            case .q4_1: bound = 0.51 * (hi - lo) / 15 + 15 * (hi - lo) / 15 * 0x1p-11 + abs(lo) * 0x1p-11
            default: bound = 0.51 * (hi - lo) / 31 + 31 * (hi - lo) / 31 * 0x1p-11 + abs(lo) * 0x1p-11
            }
            for j in 32 * b..<32 * b + 32 {
                #expect(abs(x[j] - y[j]) <= bound, "\(type.name) element \(j): \(x[j]) -> \(y[j])")
            }
        }
    }

    @Test func q4_0MatchesGGMLOnAKnownBlock() throws {
        // max by magnitude is -4 -> d = 0.5; q = trunc(x / 0.5 + 8.5) clamped to 15.
        var x = [Float](repeating: 0, count: 32)
        x[0] = -4
        x[1] = 4
        x[2] = 1.2
        x[16] = -0.3
        let q = try KernelReference.quantize(.q4_0, x)
        #expect(Half(bits: UInt16(q[0]) | UInt16(q[1]) << 8).float == 0.5)
        #expect(q[2] == 0x70)  // -4 -> trunc(0.5) = 0; -0.3 -> trunc(7.9) = 7
        #expect(q[3] & 0x0F == 15)  // 4 -> 16.5 -> clamped
        #expect(q[4] & 0x0F == 10)  // 1.2 / 0.5 + 8.5 = 10.9
    }
}
