import CHearthKernels
import Foundation

/// Whisper's log-mel spectrogram: 25 ms frames every 10 ms of 16 kHz audio, the power of a
/// 400-point FFT through Slaney-style mel filters, log10, floored at 8 below the loudest value
/// of the whole recording and scaled as `(x + 4) / 4` (faster-whisper's `FeatureExtractor`).
public struct LogMelSpectrogram: Sendable {
    /// Mel bands (80 for Whisper up to large-v2, 128 for large-v3).
    public let melCount: Int
    public let frameCount: Int
    /// Mel-major: band `m` of frame `f` is `values[m * frameCount + f]`.
    public let values: [Float]

    public static let hop = 160
    public static let fftSize = 400

    /// The spectrogram of 16 kHz `samples`, followed by `padding` zero samples (faster-whisper
    /// appends 160): `(count + padding) / 160` frames.
    public init(samples: [Float], melCount: Int = 80, padding: Int = 160) {
        self.melCount = melCount
        let padded = samples + [Float](repeating: 0, count: max(0, padding))
        let frames = padded.count / Self.hop
        frameCount = frames
        let filters = Self.filters(melCount: melCount)
        var values = [Float](repeating: 0, count: melCount * frames)
        guard frames > 0 else {
            self.values = values
            return
        }
        let parts = min(8, max(1, frames / 64))
        nonisolated(unsafe) let largest = UnsafeMutableBufferPointer<Float>.allocate(capacity: parts)
        defer { largest.deallocate() }
        padded.withUnsafeBufferPointer { x in
            filters.withUnsafeBufferPointer { filters in
                values.withUnsafeMutableBufferPointer { out in
                    // Each part writes its own frames of `out` and its own slot of `largest`.
                    nonisolated(unsafe) let (x, filters, out) = (x, filters, out)
                    DispatchQueue.concurrentPerform(iterations: parts) { part in
                        largest[part] = hk_log_mel_frames(x.baseAddress, Int64(x.count), filters.baseAddress, Int64(melCount),
                                                          Int64(frames * part / parts), Int64(frames * (part + 1) / parts),
                                                          out.baseAddress, Int64(frames))
                    }
                }
            }
        }
        let floor = largest.max()! - 8
        for i in values.indices { values[i] = (max(values[i], floor) + 4) / 4 }
        self.values = values
    }

    /// Slaney-style mel filters over the 201 bins of a 400-point FFT at 16 kHz, `melCount` rows,
    /// as librosa and faster-whisper compute them (in double precision, then rounded to float).
    public static func filters(melCount: Int, sampleRate: Int = 16_000) -> [Float] {
        let bins = fftSize / 2 + 1
        let fftFrequencies = (0..<bins).map { Double($0) * Double(sampleRate) / Double(fftSize) }
        let minMel = 0.0, maxMel = 45.245640471924965
        let fSp = 200.0 / 3, minLogHz = 1000.0
        let minLogMel = minLogHz / fSp
        let logStep = log(6.4) / 27
        let frequencies = (0..<melCount + 2).map { i -> Double in
            // numpy's linspace: start + i * step, the last point exactly the end.
            let mel = i == melCount + 1 ? maxMel : Double(i) * ((maxMel - minMel) / Double(melCount + 1)) + minMel
            return mel >= minLogMel ? minLogHz * exp(logStep * (mel - minLogMel)) : fSp * mel
        }
        var weights = [Float](repeating: 0, count: melCount * bins)
        for m in 0..<melCount {
            let lowerWidth = frequencies[m + 1] - frequencies[m]
            let upperWidth = frequencies[m + 2] - frequencies[m + 1]
            let norm = 2 / (frequencies[m + 2] - frequencies[m])
            for b in 0..<bins {
                let lower = -(frequencies[m] - fftFrequencies[b]) / lowerWidth
                let upper = (frequencies[m + 2] - fftFrequencies[b]) / upperWidth
                weights[m * bins + b] = Float(max(0, min(lower, upper)) * norm)
            }
        }
        return weights
    }
}
