import HearthTestSupport
import HearthFormats
import HearthKernels
import Testing

@Suite struct LayoutTests {
    @Test func blockStructsMatchGGMLSizes() {
        #expect(MemoryLayout<F32Block>.size == GGMLType.f32.blockBytes)
        #expect(MemoryLayout<F16Block>.size == GGMLType.f16.blockBytes)
        #expect(MemoryLayout<BF16Block>.size == GGMLType.bf16.blockBytes)
        #expect(MemoryLayout<Q4_0Block>.size == GGMLType.q4_0.blockBytes)
        #expect(MemoryLayout<Q4_1Block>.size == GGMLType.q4_1.blockBytes)
        #expect(MemoryLayout<Q5_0Block>.size == GGMLType.q5_0.blockBytes)
        #expect(MemoryLayout<Q5_1Block>.size == GGMLType.q5_1.blockBytes)
        #expect(MemoryLayout<Q8_0Block>.size == GGMLType.q8_0.blockBytes)
        #expect(MemoryLayout<Q8_1Block>.size == GGMLType.q8_1.blockBytes)
        #expect(MemoryLayout<Q4_KBlock>.size == GGMLType.q4_K.blockBytes)
        #expect(MemoryLayout<Q5_KBlock>.size == GGMLType.q5_K.blockBytes)
        #expect(MemoryLayout<Q6_KBlock>.size == GGMLType.q6_K.blockBytes)
        #expect(MemoryLayout<Q8_KBlock>.size == GGMLType.q8_K.blockBytes)
        #expect(MemoryLayout<Q2_KBlock>.size == GGMLType.q2_K.blockBytes)
        #expect(MemoryLayout<Q3_KBlock>.size == GGMLType.q3_K.blockBytes)
        #expect(MemoryLayout<IQ4_NLBlock>.size == GGMLType.iq4_nl.blockBytes)
        #expect(MemoryLayout<IQ4_XSBlock>.size == GGMLType.iq4_xs.blockBytes)
        #expect(MemoryLayout<MXFP4Block>.size == GGMLType.mxfp4.blockBytes)
        #expect(MemoryLayout<IQ2_XXSBlock>.size == GGMLType.iq2_xxs.blockBytes)
        #expect(MemoryLayout<IQ2_XSBlock>.size == GGMLType.iq2_xs.blockBytes)
        #expect(MemoryLayout<IQ2_SBlock>.size == GGMLType.iq2_s.blockBytes)
        #expect(MemoryLayout<IQ3_XXSBlock>.size == GGMLType.iq3_xxs.blockBytes)
        #expect(MemoryLayout<IQ3_SBlock>.size == GGMLType.iq3_s.blockBytes)
        #expect(MemoryLayout<IQ1_SBlock>.size == GGMLType.iq1_s.blockBytes)
        #expect(MemoryLayout<IQ1_MBlock>.size == GGMLType.iq1_m.blockBytes)
    }

    @Test func fieldOffsetsMatchGGML() {
        #expect(MemoryLayout<Q5_1Block>.offset(of: \.qh) == 4)
        #expect(MemoryLayout<Q5_1Block>.offset(of: \.qs) == 8)
        #expect(MemoryLayout<Q5_KBlock>.offset(of: \.qh) == 16)
        #expect(MemoryLayout<Q5_KBlock>.offset(of: \.qs) == 48)
        #expect(MemoryLayout<Q6_KBlock>.offset(of: \.scales) == 192)
        #expect(MemoryLayout<Q6_KBlock>.offset(of: \.d) == 208)
        #expect(MemoryLayout<Q8_KBlock>.offset(of: \.bsums) == 260)
        #expect(MemoryLayout<IQ2_XSBlock>.offset(of: \.scales) == 66)
        #expect(MemoryLayout<IQ2_SBlock>.offset(of: \.qh) == 66)
        #expect(MemoryLayout<IQ3_SBlock>.offset(of: \.signs) == 74)
        #expect(MemoryLayout<IQ3_SBlock>.offset(of: \.scales) == 106)
        #expect(MemoryLayout<IQ1_SBlock>.offset(of: \.qh) == 34)
        #expect(MemoryLayout<IQ1_MBlock>.offset(of: \.scales) == 48)
    }

    @Test(arguments: GGMLType.allCases.filter { $0.blockStruct != nil })
    func blockStructOfTypeHasItsSize(_ type: GGMLType) throws {
        let block = try #require(type.blockStruct)
        #expect(block.ggmlType == type)
    }

    #if !(os(macOS) && arch(x86_64))
    @Test func halfToFloatMatchesFloat16ForEveryBitPattern() {
        for bits in UInt16.min...UInt16.max {
            let mine = Half(bits: bits).float, theirs = Float(Float16(bitPattern: bits))
            if theirs.isNaN {
                #expect(mine.isNaN)
            } else if mine.bitPattern != theirs.bitPattern {
                Issue.record("half \(bits): \(mine) != \(theirs)")
                return
            }
        }
    }

    @Test func floatToHalfRoundsLikeFloat16() {
        var rng = SeededGenerator(seed: 1)
        var samples: [Float] = [0, -0, 1, -2, 65504, 65519.99, 65520, 1e9, -1e9, 0x1p-14, 0x1p-24,
                                0x1p-25, 0x1.8p-25, 0x1p-26, 1e-30, .infinity, -.infinity,
                                Float(bitPattern: 0x3f80_1000), Float(bitPattern: 0x3f80_3000)]
        for _ in 0..<200_000 {
            samples.append(Float(bitPattern: UInt32.random(in: 0x2000_0000...0x4800_0000, using: &rng))
                           * (Bool.random(using: &rng) ? 1 : -1))
        }
        for x in samples {
            let mine = Half(x).bits, theirs = Float16(x).bitPattern
            if mine != theirs {
                Issue.record("\(x): \(mine) != \(theirs)")
                return
            }
        }
        #expect(Half(.nan).float.isNaN)
    }
    #endif

    @Test func bfloat16RoundsToNearestEven() {
        #expect(BFloat16(1).bits == 0x3F80)
        #expect(BFloat16(-5).bits == 0xC0A0)
        #expect(BFloat16(Float(bitPattern: 0x3F80_8000)).bits == 0x3F80)  // tie, even stays
        #expect(BFloat16(Float(bitPattern: 0x3F81_8000)).bits == 0x3F82)  // tie, odd rounds up
        #expect(BFloat16(Float(bitPattern: 0x3F80_8001)).bits == 0x3F81)
        #expect(BFloat16(.nan).float.isNaN)
        #expect(BFloat16(bits: 0x4049).float == 3.140625)
    }
}
