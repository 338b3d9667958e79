import Foundation
import HearthCore
import HearthSpeech
import HearthTestSupport
import Testing

/// Speech clips with transcripts from Debian's pocketsphinx-testdata.
/// A WAV file written by hand: `format` 1 (PCM) or 3 (float), interleaved frames.
func wavFile(format: UInt16, channels: UInt16, rate: UInt32, bits: UInt16, data: [UInt8], extensible: Bool = false) -> [UInt8] {
    var fmt: [UInt8] = []
    func put<T: FixedWidthInteger>(_ v: T, _ into: inout [UInt8]) { withUnsafeBytes(of: v.littleEndian) { into += $0 } }
    put(extensible ? UInt16(0xFFFE) : format, &fmt)
    put(channels, &fmt)
    put(rate, &fmt)
    put(rate * UInt32(channels) * UInt32(bits / 8), &fmt)
    put(channels * bits / 8, &fmt)
    put(bits, &fmt)
    if extensible {
        put(UInt16(22), &fmt)
        put(bits, &fmt)
        put(UInt32(0), &fmt)
        put(format, &fmt)
        fmt += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }
    var out: [UInt8] = Array("RIFF".utf8)
    put(UInt32(4 + 8 + fmt.count + 8 + data.count + 8 + 2), &out)
    out += Array("WAVE".utf8)
    out += Array("LIST".utf8)   // a chunk to skip, with an odd size and its pad byte
    put(UInt32(1), &out)
    out += [0x41, 0x00]
    out += Array("fmt ".utf8)
    put(UInt32(fmt.count), &out)
    out += fmt
    out += Array("data".utf8)
    put(UInt32(data.count), &out)
    out += data
    return out
}

@Suite struct AudioTests {
    func write(_ bytes: [UInt8], _ directory: TemporaryDirectory, _ name: String = "a.wav") throws -> URL {
        let url = directory.file(name)
        try Data(bytes).write(to: url)
        return url
    }

    @Test func decodesSixteenBitMonoExactly() throws {
        let url = try SpeechClips.url("librivox/sense_and_sensibility_01_austen_64kb-0880.wav")
        let audio = try AudioSamples.load(contentsOf: url)
        let raw = try Data(contentsOf: url)
        let pcm = raw.suffix(from: 44).withUnsafeBytes { b in (0..<b.count / 2).map { Int16(littleEndian: b.loadUnaligned(fromByteOffset: 2 * $0, as: Int16.self)) } }
        #expect(audio.sampleRate == 16_000)
        #expect(audio.samples.count == pcm.count)
        #expect(zip(audio.samples, pcm).allSatisfy { $0 == Float($1) / 32768 })
    }

    /// The same two frames in every encoding a WAV can hold give the same mono samples.
    @Test func everyEncodingAndLayout() throws {
        let directory = try TemporaryDirectory()
        let left: [Float] = [0.5, -0.25], right: [Float] = [0.25, -0.75]
        var bytes: [UInt8] = []
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        let encodings: [(UInt16, UInt16, (Float) -> Void)] = [
            (1, 8, { bytes.append(UInt8(Int($0 * 128) + 128)) }),
            (1, 16, { put(Int16($0 * 32768)) }),
            (1, 24, { let v = Int32($0 * 8_388_608); bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF)] }),
            (1, 32, { put(Int32($0 * 2_147_483_648)) }),
            (3, 32, { put($0.bitPattern) }),
            (3, 64, { put(Double($0).bitPattern) }),
        ]
        for (format, bits, encode) in encodings {
            for extensible in [false, true] {
                bytes = []
                for i in 0..<2 { encode(left[i]); encode(right[i]) }
                let url = try write(wavFile(format: format, channels: 2, rate: 16_000, bits: bits, data: bytes, extensible: extensible), directory)
                let audio = try AudioSamples.load(contentsOf: url)
                #expect(audio.samples == [0.375, -0.5], "format \(format), \(bits) bits, extensible \(extensible)")
            }
        }
    }

    /// A 440 Hz tone at 44.1 kHz comes out at 16 kHz as the same tone, and one at 8 kHz too.
    @Test(arguments: [44_100, 8_000, 48_000])
    func resamplesToSixteenKilohertz(rate: Int) throws {
        let seconds = 1.0
        let tone = (0..<Int(Double(rate) * seconds)).map { Float(0.5 * sin(2 * Double.pi * 440 * Double($0) / Double(rate))) }
        let audio = AudioSamples(samples: tone, sampleRate: rate).resampled(to: 16_000)
        #expect(audio.samples.count == 16_000)
        // Away from the edges, where the filter runs out of input.
        let error = (200..<15_800).map { i in abs(audio.samples[i] - Float(0.5 * sin(2 * Double.pi * 440 * Double(i) / 16_000))) }.max()!
        #expect(error < 2e-3, "largest error \(error)")
    }

    @Test func badFilesAreClearErrors() throws {
        let directory = try TemporaryDirectory()
        func message(_ bytes: [UInt8], _ name: String = "a.wav") throws -> String {
            do {
                _ = try AudioSamples.load(contentsOf: try write(bytes, directory, name))
                return "decoded"
            } catch let error as HearthError {
                return error.message
            }
        }
        let good = wavFile(format: 1, channels: 1, rate: 16_000, bits: 16, data: [0, 1, 2, 3, 4, 5])
        #expect(try message(good) == "decoded")
        #expect(try message([]).contains("empty"))
        #expect(try message(Array(good.prefix(good.count - 3))).contains("truncated"))
        #expect(try message(Array(good.prefix(30))).contains("truncated"))
        #expect(try message(wavFile(format: 1, channels: 1, rate: 16_000, bits: 16, data: [])).contains("no audio"))
        #expect(try message(wavFile(format: 2, channels: 1, rate: 16_000, bits: 4, data: [1, 2])).contains("not PCM or float"))
        // Text is not audio: ffmpeg says so (or, without ffmpeg, the error says to install it).
        let text = try message(Array("hello, this is not audio at all".utf8), "notes.mp3")
        #expect(text.contains("ffmpeg"))
        #expect(throws: HearthError.fileNotFound(path: directory.file("absent.wav").path)) {
            try AudioSamples.load(contentsOf: directory.file("absent.wav"))
        }
    }

    /// Formats other than WAV go through ffmpeg: a FLAC copy of a clip decodes to its samples.
    @Test func otherFormatsThroughFFmpeg() throws {
        let directory = try TemporaryDirectory()
        let wav = try SpeechClips.url("cards/001.wav")
        let flac = directory.file("001.flac")
        #expect(try Tools.run("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", wav.path, flac.path]) == 0)
        let fromFLAC = try AudioSamples.load(contentsOf: flac)
        let fromWAV = try AudioSamples.load(contentsOf: wav)
        #expect(fromFLAC.samples == fromWAV.samples)
    }
}

@Suite struct LogMelTests {
    /// The spectrogram of a librivox clip equals faster-whisper's within 1e-4.
    @Test func equalsFasterWhisper() throws {
        let meta = try JSONSerialization.jsonObject(with: Data(contentsOf: SpeechClips.fixture("mel-0880.json"))) as! [String: Any]
        let frames = meta["frames"] as! Int
        let expected = try Data(contentsOf: SpeechClips.fixture("mel-0880.f32")).withUnsafeBytes { b in
            (0..<b.count / 4).map { Float(bitPattern: UInt32(littleEndian: b.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
        #expect(expected.count == 80 * frames)
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(meta["clip"] as! String))
        let mel = LogMelSpectrogram(samples: audio.samples)
        #expect(mel.melCount == 80)
        #expect(mel.frameCount == frames + 1)
        var largest: Float = 0
        for m in 0..<80 {
            for f in 0..<frames { largest = max(largest, abs(mel.values[m * mel.frameCount + f] - expected[m * frames + f])) }
        }
        #expect(largest <= 1e-4, "largest difference \(largest)")
    }

    @Test func shortAndSilentAudio() {
        #expect(LogMelSpectrogram(samples: []).frameCount == 1)
        let silent = LogMelSpectrogram(samples: [Float](repeating: 0, count: 1600))
        #expect(silent.frameCount == 11)
        #expect(silent.values.allSatisfy { $0 == (-10 + 4) / 4 })
        let click = LogMelSpectrogram(samples: [1] + [Float](repeating: 0, count: 15))
        #expect(click.frameCount == 1 && click.values.allSatisfy { $0.isFinite })
    }
}
