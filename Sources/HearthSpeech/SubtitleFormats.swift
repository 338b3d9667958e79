import Foundation

/// How a transcription is written out.
public enum TranscriptFormat: String, Sendable, CaseIterable {
    /// The text alone.
    case text
    /// Text, language, duration and segments as JSON.
    case json
    /// SubRip subtitles.
    case srt
    /// WebVTT subtitles.
    case vtt

    /// The file extension.
    public var fileExtension: String { rawValue == "text" ? "txt" : rawValue }
}

extension Transcription {
    /// The transcription in `format`.
    public func formatted(_ format: TranscriptFormat) -> String {
        switch format {
        case .text:
            return text.trimmingCharacters(in: .whitespaces) + "\n"
        case .json:
            struct Output: Encodable {
                struct Segment: Encodable {
                    var id: Int, seek: Int, start: Double, end: Double, text: String, tokens: [Int], temperature: Double
                    var avg_logprob: Double, compression_ratio: Double, no_speech_prob: Double
                    var words: [TranscriptionWord]?
                }
                var text: String, language: String, language_probability: Double, duration: Double
                var segments: [Segment]
            }
            let output = Output(text: text, language: language, language_probability: languageProbability, duration: duration,
                                segments: segments.enumerated().map { i, s in
                                    .init(id: i, seek: s.seek, start: s.start, end: s.end, text: s.text, tokens: s.tokens,
                                          temperature: s.temperature, avg_logprob: s.averageLogProbability,
                                          compression_ratio: s.compressionRatio, no_speech_prob: s.noSpeechProbability, words: s.words)
                                })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return String(decoding: (try? encoder.encode(output)) ?? Data(), as: UTF8.self) + "\n"
        case .srt:
            return segments.enumerated().map { i, s in
                "\(i + 1)\n\(Self.timestamp(s.start, separator: ",")) --> \(Self.timestamp(s.end, separator: ","))\n\(s.text.trimmingCharacters(in: .whitespaces))\n"
            }.joined(separator: "\n")
        case .vtt:
            return "WEBVTT\n\n" + segments.map { s in
                "\(Self.timestamp(s.start, separator: ".")) --> \(Self.timestamp(s.end, separator: "."))\n\(s.text.trimmingCharacters(in: .whitespaces))\n"
            }.joined(separator: "\n")
        }
    }

    /// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
    static func timestamp(_ seconds: Double, separator: String) -> String {
        let milliseconds = Int((max(0, seconds) * 1000).rounded())
        let h = milliseconds / 3_600_000, m = milliseconds / 60_000 % 60, s = milliseconds / 1000 % 60, ms = milliseconds % 1000
        return String(format: "%02d:%02d:%02d%@%03d", h, m, s, separator, ms)
    }
}
