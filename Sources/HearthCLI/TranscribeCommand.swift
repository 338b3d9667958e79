import ArgumentParser
import Foundation
import Hearth

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct TranscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transcribe",
        abstract: "Turn speech in audio files into text with a Whisper model.",
        discussion: """
            MODEL is a Whisper model in one of three layouts: a faster-whisper (CTranslate2) folder with \
            model.bin, such as models/whisper-base; a Hugging Face folder with model.safetensors and \
            config.json (openai/whisper-base); or a whisper.cpp file such as ggml-base.bin. A Hub repository of \
            either folder form (Systran/faster-whisper-base, openai/whisper-base), or one file of a whisper.cpp \
            repository named after a colon (ggerganov/whisper.cpp:base for ggml-base.bin), is pulled first if needed. FILE \
            is a WAV file (any rate, any channels) or, with ffmpeg installed, any audio or video file ffmpeg \
            reads. Without -o the result goes to standard output; with -o DIR each FILE becomes DIR/NAME.EXT. \
            Long files show their progress on standard error.
            """
    )

    @Argument(help: "A Whisper model: a faster-whisper or Hugging Face folder, a whisper.cpp .bin file, or a Hub repository.")
    var model: String

    @Argument(help: "Audio files to transcribe.")
    var files: [String]

    @Option(help: "The spoken language's code (en, de, fr…); detected from the first 30 seconds if not given.")
    var language: String?

    @Flag(help: "Translate the speech into English.")
    var translate = false

    @Option(help: "Output format: text, json, srt or vtt.")
    var format: String = "text"

    @Option(name: .customLong("initial-prompt"), help: "Text that comes before the audio, to steer spelling and style.")
    var initialPrompt: String?

    @Flag(name: .customLong("word-timestamps"), help: "Time each word (in the json output; segments start and end on words).")
    var wordTimestamps = false

    @Option(name: .customLong("beam-size"), help: "Hypotheses beam search keeps (1 decodes greedily).")
    var beamSize = 5

    @Option(help: "The first temperature; 0 uses beam search, above 0 samples.")
    var temperature = 0.0

    @Flag(name: .customLong("no-fallback"), help: "Keep each window's first decoding even when it repeats itself or is unlikely.")
    var noFallback = false

    @Option(help: "Seed for sampling at temperatures above 0.")
    var seed: UInt64 = 0

    @Option(name: [.short, .customLong("output-dir")], help: "Write each file's result into this folder.")
    var outputDirectory: String?

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    @Option(help: "How the model's matrices are held: float (the same results as faster-whisper's float32) or q8_0 (a quarter of the memory and a faster decoder; close to the float results, not equal).")
    var weights = "float"

    @Flag(name: .customLong("yes"), help: "Pull the model without asking if it is not in the cache.")
    var yes = false

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("Give at least one audio file.") }
        guard TranscriptFormat(rawValue: format) != nil else {
            throw ValidationError("--format must be one of \(TranscriptFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512.") }
        guard WhisperWeights(rawValue: weights) != nil else {
            throw ValidationError("--weights must be one of \(WhisperWeights.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        do {
            try transcriptionConfig.validate()
        } catch let error as HearthError {
            throw ValidationError(error.message)
        }
    }

    var transcriptionConfig: TranscriptionConfig {
        TranscriptionConfig(language: language, translate: translate, initialPrompt: initialPrompt, beamSize: beamSize,
                            temperature: temperature, temperatureIncrement: noFallback ? nil : 0.2,
                            wordTimestamps: wordTimestamps, seed: seed)
    }

    func run() async throws {
        try await reportingErrors {
            let format = TranscriptFormat(rawValue: format)!
            for file in files where !FileManager.default.fileExists(atPath: file) {
                throw HearthError.fileNotFound(path: file)
            }
            let hearth = Hearth(configuration: .init(threads: threads))
            if !FileManager.default.fileExists(atPath: (model as NSString).expandingTildeInPath) {
                try await pullIfMissing(model, hearth: hearth, yes: yes)
            }
            let speech = try await hearth.loadTranscriber(model, pullIfMissing: false, weights: WhisperWeights(rawValue: weights)!)
            let config = transcriptionConfig
            if let outputDirectory {
                try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
            }
            let terminal = isatty(STDERR_FILENO) != 0
            for file in files {
                let audio = try AudioSamples.load(contentsOf: URL(fileURLWithPath: file))
                let duration = audio.duration
                let name = (file as NSString).lastPathComponent
                let result = try await speech.transcribe(samples: audio.samples, config: config) { done, _ in
                    // Progress for anything longer than one window.
                    guard duration > 30 else { return }
                    let fraction = min(1, done / duration)
                    let line = "\(name): \(Int(fraction * 100))% (\(Int(done)) of \(Int(duration.rounded())) s)"
                    FileHandle.standardError.write(Data((terminal ? "\r" + line : line + "\n").utf8))
                }
                if duration > 30, terminal { FileHandle.standardError.write(Data("\n".utf8)) }
                let text = result.formatted(format)
                if let outputDirectory {
                    let base = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
                    let target = URL(fileURLWithPath: outputDirectory).appendingPathComponent("\(base).\(format.fileExtension)")
                    try Data(text.utf8).write(to: target, options: .atomic)
                    FileHandle.standardError.write(Data("\(file) → \(target.path)\n".utf8))
                } else {
                    if files.count > 1, format == .text { print("\(file):") }
                    print(text, terminator: "")
                }
            }
        }
    }
}
