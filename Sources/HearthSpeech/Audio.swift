import Foundation
import HearthCore

/// Mono audio as floats in [-1, 1] at a known rate.
public struct AudioSamples: Sendable, Equatable {
    public var samples: [Float]
    public var sampleRate: Int

    public init(samples: [Float], sampleRate: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
    }

    /// Seconds of audio.
    public var duration: Double { Double(samples.count) / Double(sampleRate) }

    /// The rate Whisper listens at.
    public static let whisperRate = 16_000

    /// Reads an audio file as mono samples at `sampleRate`: WAV (8-, 16-, 24- and 32-bit PCM,
    /// 32- and 64-bit float, any rate, any number of channels) in Swift, anything else through
    /// `ffmpeg` when it is installed.
    public static func load(contentsOf url: URL, sampleRate: Int = whisperRate) throws -> AudioSamples {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { throw HearthError.fileNotFound(path: path) }
        let data: Data
        do {
            data = try Data(contentsOf: url, options: .alwaysMapped)
        } catch {
            throw HearthError.resourceUnavailable("Cannot read \(path): \(error.localizedDescription)")
        }
        if data.count >= 12, data.prefix(4) == Data("RIFF".utf8), data[8..<12] == Data("WAVE".utf8) {
            return try WAVDecoder.decode(data, path: path).resampled(to: sampleRate)
        }
        if data.isEmpty { throw HearthError.invalidAudioFile(path: path, reason: "the file is empty") }
        return try FFmpegDecoder.decode(path: path, sampleRate: sampleRate)
    }

    /// The same audio at `rate`, through a Kaiser-windowed sinc low-pass (unchanged when the
    /// rate is already `rate`).
    public func resampled(to rate: Int) -> AudioSamples {
        if rate == sampleRate || samples.isEmpty { return AudioSamples(samples: samples, sampleRate: rate) }
        return AudioSamples(samples: Resampler(from: sampleRate, to: rate).resample(samples), sampleRate: rate)
    }
}

/// RIFF WAVE files.
enum WAVDecoder {
    static func decode(_ data: Data, path: String) throws -> AudioSamples {
        func invalid(_ reason: String) -> HearthError { .invalidAudioFile(path: path, reason: reason) }
        return try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> AudioSamples in
            func u16(_ o: Int) -> Int { Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt16.self))) }
            func u32(_ o: Int) -> Int { Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: o, as: UInt32.self))) }
            var format: (code: Int, channels: Int, rate: Int, bits: Int, blockAlign: Int)?
            var offset = 12
            while offset + 8 <= bytes.count {
                let id = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4]), as: UTF8.self)
                var size = u32(offset + 4)
                let body = offset + 8
                if id == "fmt " {
                    guard size >= 16, body + size <= bytes.count else {
                        throw invalid("truncated: its format chunk needs \(max(size, 16)) bytes and \(bytes.count - body) remain")
                    }
                    var code = u16(body)
                    if code == 0xFFFE {
                        guard size >= 40 else { throw invalid("its extensible format chunk is \(size) bytes, shorter than 40") }
                        code = u16(body + 24)
                    }
                    format = (code, u16(body + 2), u32(body + 4), u16(body + 14), u16(body + 12))
                } else if id == "data" {
                    guard let format else { throw invalid("its data chunk comes before any format chunk") }
                    let remaining = bytes.count - body
                    // Streaming writers leave the size at 0 or 0xFFFFFFFF: the data runs to the end.
                    if size == 0 || size == 0xFFFF_FFFF {
                        size = remaining
                    } else if size > remaining {
                        throw invalid("truncated: its data chunk claims \(size) bytes but only \(remaining) remain")
                    }
                    return try samples(UnsafeRawBufferPointer(rebasing: bytes[body..<body + size]), format: format, invalid: invalid)
                }
                guard size <= bytes.count - body else {
                    throw invalid("truncated: its \(id.debugDescription) chunk claims \(size) bytes but only \(bytes.count - body) remain")
                }
                offset = body + size + (size & 1)
            }
            throw invalid(format == nil ? "it has no format chunk (truncated or not a WAV file)" : "it has no data chunk (truncated?)")
        }
    }

    private static func samples(_ data: UnsafeRawBufferPointer, format: (code: Int, channels: Int, rate: Int, bits: Int, blockAlign: Int),
                                invalid: (String) -> HearthError) throws -> AudioSamples {
        let (code, channels, rate, bits, _) = format
        guard channels >= 1, channels <= 64 else { throw invalid("it says it has \(channels) channels") }
        guard rate >= 1000, rate <= 768_000 else { throw invalid("its sample rate of \(rate) Hz is not one audio uses") }
        let width = bits / 8
        let supported: Bool
        switch code {
        case 1: supported = [8, 16, 24, 32].contains(bits)
        case 3: supported = [32, 64].contains(bits)
        default: supported = false
        }
        guard supported, bits % 8 == 0 else {
            throw invalid("its encoding (format \(code), \(bits) bits) is not PCM or float; convert it with `ffmpeg -i FILE -ar 16000 out.wav`")
        }
        let frame = width * channels
        let frames = data.count / frame
        guard frames > 0 else { throw invalid("it contains no audio") }
        func sample(_ o: Int) -> Float {
            switch (code, bits) {
            case (1, 8): return (Float(data[o]) - 128) / 128
            case (1, 16): return Float(Int16(littleEndian: data.loadUnaligned(fromByteOffset: o, as: Int16.self))) / 32768
            case (1, 24):
                let v = Int32(data[o]) | Int32(data[o + 1]) << 8 | Int32(Int8(bitPattern: data[o + 2])) << 16
                return Float(v) / 8_388_608
            case (1, 32): return Float(Double(Int32(littleEndian: data.loadUnaligned(fromByteOffset: o, as: Int32.self))) / 2_147_483_648)
            case (3, 32): return Float(bitPattern: UInt32(littleEndian: data.loadUnaligned(fromByteOffset: o, as: UInt32.self)))
            default: return Float(Double(bitPattern: UInt64(littleEndian: data.loadUnaligned(fromByteOffset: o, as: UInt64.self))))
            }
        }
        var out = [Float](repeating: 0, count: frames)
        for f in 0..<frames {
            let base = f * frame
            if channels == 1 {
                out[f] = sample(base)
            } else {
                var sum: Float = 0
                for c in 0..<channels { sum += sample(base + c * width) }
                out[f] = sum / Float(channels)
            }
        }
        return AudioSamples(samples: out, sampleRate: rate)
    }
}

/// Other formats (MP3, FLAC, Ogg, M4A, video…) through the `ffmpeg` command.
enum FFmpegDecoder {
    static func decode(path: String, sampleRate: Int) throws -> AudioSamples {
        guard let ffmpeg = executable("ffmpeg") else {
            throw HearthError.invalidAudioFile(path: path, reason: "it is not a WAV file, and other formats need ffmpeg, which is not installed (apt install ffmpeg, or brew install ffmpeg)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        process.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-i", path,
                             "-f", "f32le", "-ac", "1", "-ar", String(sampleRate), "-"]
        // ffmpeg's messages go to a file, so that only one pipe needs reading while it runs.
        let messages = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-ffmpeg-\(UUID().uuidString).log")
        guard FileManager.default.createFile(atPath: messages.path, contents: nil),
              let errors = try? FileHandle(forWritingTo: messages) else {
            throw HearthError.resourceUnavailable("Cannot create \(messages.path) for ffmpeg's messages")
        }
        defer {
            try? errors.close()
            try? FileManager.default.removeItem(at: messages)
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw HearthError.resourceUnavailable("Cannot run \(ffmpeg): \(error.localizedDescription)")
        }
        let pcm = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = ((try? String(contentsOf: messages, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let last = message.split(separator: "\n").last.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw HearthError.invalidAudioFile(path: path, reason: "ffmpeg could not decode it (\(last))")
        }
        let count = pcm.count / 4
        guard count > 0 else { throw HearthError.invalidAudioFile(path: path, reason: "it contains no audio") }
        let samples = pcm.withUnsafeBytes { raw in
            (0..<count).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
        return AudioSamples(samples: samples, sampleRate: sampleRate)
    }

    /// The full path of `name` on PATH.
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// Band-limited resampling: each output sample is a sum of input samples weighted by a
/// Kaiser-windowed sinc whose cut-off is 97% of the lower of the two Nyquist frequencies,
/// 16 zero crossings either side, read from a table with linear interpolation.
struct Resampler {
    let ratio: Double           // input samples per output sample
    let cutoff: Double          // fraction of the input's Nyquist frequency kept
    let halfWidth: Double       // input samples either side of an output sample
    let table: [Float]          // kernel at 0, 1/steps, ... zero crossings
    static let zeroCrossings = 16
    static let steps = 512
    static let beta = 8.6

    init(from input: Int, to output: Int) {
        ratio = Double(input) / Double(output)
        cutoff = 0.97 * min(1, Double(output) / Double(input))
        halfWidth = Double(Self.zeroCrossings) / cutoff
        let count = Self.zeroCrossings * Self.steps + 2
        let i0Beta = Self.besselI0(Self.beta)
        table = (0..<count).map { i in
            let x = Double(i) / Double(Self.steps)        // in zero crossings
            let t = x / Double(Self.zeroCrossings)
            guard t < 1 else { return 0 }
            let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
            return Float(sinc * Self.besselI0(Self.beta * (1 - t * t).squareRoot()) / i0Beta)
        }
    }

    func resample(_ x: [Float]) -> [Float] {
        let outCount = Int((Double(x.count) / ratio).rounded(.down))
        guard outCount > 0 else { return [] }
        var out = [Float](repeating: 0, count: outCount)
        let scale = Float(cutoff)
        x.withUnsafeBufferPointer { x in
            table.withUnsafeBufferPointer { table in
                out.withUnsafeMutableBufferPointer { out in
                    // Each part writes its own range of `out`.
                    nonisolated(unsafe) let (x, table, out) = (x, table, out)
                    DispatchQueue.concurrentPerform(iterations: 8) { part in
                        let lower = outCount * part / 8, upper = outCount * (part + 1) / 8
                        for j in lower..<upper {
                            let center = Double(j) * ratio
                            let first = max(0, Int((center - halfWidth).rounded(.up)))
                            let last = min(x.count - 1, Int((center + halfWidth).rounded(.down)))
                            var sum: Float = 0
                            if first <= last {
                                for k in first...last {
                                    let position = abs(Double(k) - center) * cutoff * Double(Self.steps)
                                    let index = Int(position)
                                    let fraction = Float(position - Double(index))
                                    let weight = table[index] + (table[index + 1] - table[index]) * fraction
                                    sum += x[k] * weight
                                }
                            }
                            out[j] = sum * scale
                        }
                    }
                }
            }
        }
        return out
    }

    /// The modified Bessel function of the first kind, order 0 (its power series).
    static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0, k = 1.0
        let quarter = x * x / 4
        while term > 1e-12 * sum {
            term *= quarter / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}
