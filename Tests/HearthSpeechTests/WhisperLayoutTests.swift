import Foundation
import HearthCore
import HearthFormats
import HearthSpeech
import HearthTestSupport
import Testing

/// Whisper base from the Hugging Face folder and the whisper.cpp files that
/// scripts/make-whisper-layouts.py writes from the CTranslate2 folder's weights.
enum WhisperLayoutModels {
    static let huggingFace = Result { try Transcriber(WhisperFiles.load(WhisperLayouts.huggingFace, threads: 2)) }
    static let ggml = Result { try Transcriber(WhisperFiles.load(WhisperLayouts.ggml, threads: 2)) }
}

@Suite(.serialized) struct WhisperLayoutTests {
    static let clips = [
        "librivox/sense_and_sensibility_01_austen_64kb-0870.wav",
        "librivox/sense_and_sensibility_01_austen_64kb-0920.wav",
        "cards/005.wav",
    ]

    /// The same weights give the same greedy transcription in every layout: text, tokens,
    /// segment times and the language, to the bit.
    @Test(arguments: clips)
    func greedyTranscriptionEqualsCTranslate2(clip: String) throws {
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip))
        let expected = try WhisperBase.transcriber.get().transcribe(samples: audio.samples, config: .greedy)
        for (layout, transcriber) in [("Hugging Face", WhisperLayoutModels.huggingFace), ("ggml", WhisperLayoutModels.ggml)] {
            let result = try transcriber.get().transcribe(samples: audio.samples, config: .greedy)
            #expect(result.text == expected.text, "\(layout)")
            #expect(result.language == expected.language && result.languageProbability == expected.languageProbability, "\(layout)")
            #expect(result.segments.map(\.tokens) == expected.segments.map(\.tokens), "\(layout)")
            #expect(result.segments.map(\.start) == expected.segments.map(\.start), "\(layout)")
            #expect(result.segments.map(\.end) == expected.segments.map(\.end), "\(layout)")
            #expect(result.segments.map(\.noSpeechProbability) == expected.segments.map(\.noSpeechProbability), "\(layout)")
        }
    }

    static let texts = [
        "He was not an ill-disposed young man, unless to be rather cold-hearted.",
        "Guten Morgen! Heute scheint die Sonne, und wir gehen zusammen in den Park. Straße, Größe, Äpfel.",
        "Emoji: 🎉🚀👍🏽 and ❤️ — “quotes” … ‘apostrophes’",
        "Numbers: 3.14159, 1,000,000, 2024-05-01, 42%, $19.99, 0x1F",
        "Punctuation!? ... (parentheses) [brackets] {braces} <angles> «guillemets» ¿qué? ¡sí!",
        "   leading spaces, trailing spaces   \n\nnew lines\ttabs",
        "日本語のテキスト、中文文本，한국어 텍스트, русский текст, ελληνικά, עברית, العربية",
        "don't won't it's we'll they're I'm you've",
        "♪♪ ♪♪♪ [DAVID] ( SPEAKING FOREIGN LANGUAGE ) -- >> <<",
        "",
    ]

    /// The whisper.cpp file's tokenizer, rebuilt from its ranked vocabulary, encodes as
    /// tokenizer.json does, but for one merge: tokenizer.json has 49,999 merges for its 50,000
    /// merged tokens, and lacks the first, "Ġ t", which makes token 256 " t". So it spells a word
    /// that starts with " t" from " " and the rest (" to": 220 1353), where the ranks, and
    /// openai-whisper's tiktoken, take " to" whole (281). With that merge put back, the two agree
    /// on every text.
    @Test func ggmlTokenizerEqualsTokenizerJSON() throws {
        let folder = try TestFiles.modelURL("whisper-base")
        let expected = try WhisperTokenizer(contentsOf: folder)
        let json = try Data(contentsOf: folder.appendingPathComponent("tokenizer.json"))
        var object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        var model = try #require(object["model"] as? [String: Any])
        let merges = try #require(model["merges"] as? [String])
        #expect(merges.count == 49_999 && !merges.contains("Ġ t"))
        model["merges"] = ["Ġ t"] + merges
        object["model"] = model
        let repaired = try WhisperTokenizer(tokenizerJSON: try JSONSerialization.data(withJSONObject: object))

        let file = try WhisperGGMLFile(path: WhisperLayouts.ggml.path)
        let tokenizer = try WhisperTokenizer(ggml: file)
        #expect(tokenizer.encode(" to") == [281] && expected.encode(" to") == [220, 1353])
        for text in Self.texts {
            let ids = tokenizer.encode(text)
            #expect(ids == repaired.encode(text), "\(text)")
            if !text.contains(" t") { #expect(ids == expected.encode(text), "\(text)") }
            #expect(tokenizer.decode(ids) == text)
        }
        // Every text token decodes to the same bytes (the empty token 50256 aside, which both name
        // by a placeholder).
        let mismatched = (0..<expected.endOfText).filter { id in
            id != 50256 && tokenizer.decode([id]) != expected.decode([id])
        }
        #expect(mismatched.isEmpty, "tokens \(mismatched.prefix(10)) differ")
        let ids = { (t: WhisperTokenizer) in
            [t.endOfText, t.startOfTranscript, t.translate, t.transcribe, t.startOfLM, t.startOfPrevious, t.noSpeech,
             t.noTimestamps, t.timestampBegin]
        }
        #expect(ids(tokenizer) == ids(expected))
        #expect(ids(tokenizer) == [50257, 50258, 50358, 50359, 50360, 50361, 50362, 50363, 50364])
        #expect(tokenizer.languages.map(\.code) == expected.languages.map(\.code))
        #expect(tokenizer.languages.map(\.token) == expected.languages.map(\.token))
    }

    /// The Hugging Face folder's generation_config.json gives the CTranslate2 folder's
    /// suppressed tokens and alignment heads; the whisper.cpp file, which names none, gets
    /// Whisper's non-speech tokens (the CTranslate2 list less the special tokens the transcriber
    /// always suppresses) and the heads published for whisper-base.
    @Test func suppressedTokensAndAlignmentHeads() throws {
        let ct2 = try WhisperFiles.load(TestFiles.modelURL("whisper-base"), threads: 1)
        let huggingFace = try WhisperFiles.load(WhisperLayouts.huggingFace, threads: 1)
        let ggml = try WhisperFiles.load(WhisperLayouts.ggml, threads: 1)
        func heads(_ files: WhisperFiles) -> [[Int]] { files.settings.alignmentHeads.map { [$0.layer, $0.head] } }
        func atBegin(_ files: WhisperFiles) -> [Int] {
            files.settings.suppressedAtBegin ?? (files.tokenizer.encode(" ") + [files.tokenizer.endOfText])
        }
        #expect(huggingFace.settings.suppressed == ct2.settings.suppressed)
        #expect(atBegin(huggingFace) == atBegin(ct2))
        #expect(heads(huggingFace) == heads(ct2))

        let t = ct2.tokenizer
        let alwaysSuppressed: Set = [t.startOfTranscript, t.translate, t.transcribe, t.startOfLM, t.startOfPrevious, t.noSpeech]
        #expect(Set(ggml.settings.suppressed) == Set(ct2.settings.suppressed).subtracting(alwaysSuppressed))
        #expect(ggml.settings.suppressed.count == 82)
        #expect(atBegin(ggml) == atBegin(ct2))
        #expect(heads(ggml) == heads(ct2))
        #expect(ggml.model.dimensions == ct2.model.dimensions && huggingFace.model.dimensions == ct2.model.dimensions)
    }

    /// Without generation_config.json a Hugging Face folder falls back as a whisper.cpp file
    /// does: the non-speech tokens and the published heads.
    @Test func huggingFaceFolderWithoutGenerationConfig() throws {
        let directory = try TemporaryDirectory()
        let source = try WhisperLayouts.huggingFace
        for name in ["model.safetensors", "config.json", "tokenizer.json"] {
            try FileManager.default.createSymbolicLink(at: directory.file(name), withDestinationURL: source.appendingPathComponent(name))
        }
        let files = try WhisperFiles.load(directory.url, threads: 1)
        #expect(files.settings.suppressed == files.tokenizer.nonSpeechTokens)
        #expect(files.settings.suppressedAtBegin == nil)
        #expect(files.settings.alignmentHeads.map { [$0.layer, $0.head] } == [[3, 1], [4, 2], [4, 3], [4, 7], [5, 1], [5, 2], [5, 4], [5, 6]])
    }

    /// A whisper.cpp file quantized to Q8_0 (every matrix but the convolutions) is dequantized to
    /// float at load and transcribes a clip to nearly the same words.
    @Test func q8_0FileTranscribes() throws {
        let files = try WhisperFiles.load(WhisperLayouts.ggmlQ8_0, threads: 2)
        let file = try WhisperGGMLFile(path: WhisperLayouts.ggmlQ8_0.path)
        #expect(file.hyperparameters.fileType == 7 && file.tensor(named: "decoder.token_embedding.weight")?.type == .q8_0)
        let transcriber = try Transcriber(files)
        let clip = Self.clips[0]
        let audio = try AudioSamples.load(contentsOf: SpeechClips.url(clip))
        let result = try transcriber.transcribe(samples: audio.samples, config: .greedy)
        let expected = try WhisperBase.transcriber.get().transcribe(samples: audio.samples, config: .greedy)
        let words = { (text: String) in text.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init) }
        let distance = editDistance(words(result.text), words(expected.text))
        #expect(result.language == "en")
        #expect(Double(distance) <= 0.1 * Double(words(expected.text).count), "\(result.text) vs \(expected.text)")
    }

    /// Folders and files of no layout, sharded checkpoints, English-only models and a
    /// whisper.cpp file cut after its first tensor are refused with what to do.
    @Test func refusals() throws {
        let directory = try TemporaryDirectory()
        func message(_ url: URL) -> String {
            do {
                _ = try WhisperFiles.load(url, threads: 1)
                return "loaded"
            } catch let error as HearthError {
                return error.message
            } catch {
                return "not a HearthError: \(error)"
            }
        }
        #expect(try WhisperFiles.layout(of: TestFiles.modelURL("whisper-base")) == .ctranslate2)
        #expect(try WhisperFiles.layout(of: WhisperLayouts.huggingFace) == .huggingFace)
        #expect(try WhisperFiles.layout(of: WhisperLayouts.ggml) == .ggml)

        let empty = directory.file("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(message(empty).contains("a faster-whisper (CTranslate2) folder with model.bin, a Hugging Face folder with model.safetensors and config.json (openai/whisper-*), or a whisper.cpp file"))
        let sharded = directory.file("sharded")
        try FileManager.default.createDirectory(at: sharded, withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: sharded.appendingPathComponent("model.safetensors.index.json"))
        #expect(message(sharded).contains("sharded checkpoint (model.safetensors.index.json)"))
        #expect(message(try TestFiles.modelURL("whisper-base/model.bin")).contains("not a whisper.cpp model file"))
        #expect(message(directory.file("absent.bin")).contains("No file at"))

        // An English-only whisper.cpp file: its vocabulary is refused before any weight is read.
        var englishOnly: [UInt8] = []
        func put(_ value: Int32) { withUnsafeBytes(of: value.littleEndian) { englishOnly += $0 } }
        put(0x6767_6D6C)
        for value: Int32 in [51864, 1500, 512, 8, 6, 448, 512, 8, 6, 80, 1, 1, 1, 0, 0] { put(value) }
        let englishFile = directory.file("ggml-base.en.bin")
        try Data(englishOnly).write(to: englishFile)
        #expect(message(englishFile).contains("English-only Whisper model (.en, 51864 tokens)"))
        // An English-only Hugging Face folder: its config.json says so.
        let englishFolder = directory.file("whisper-base.en")
        try FileManager.default.createDirectory(at: englishFolder, withIntermediateDirectories: true)
        let config = try String(contentsOf: WhisperLayouts.huggingFace.appendingPathComponent("config.json"), encoding: .utf8)
        try config.replacingOccurrences(of: "\"vocab_size\": 51865", with: "\"vocab_size\": 51864")
            .write(to: englishFolder.appendingPathComponent("config.json"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(at: englishFolder.appendingPathComponent("model.safetensors"),
                                                   withDestinationURL: WhisperLayouts.huggingFace.appendingPathComponent("model.safetensors"))
        #expect(message(englishFolder).contains("English-only Whisper model"))

        // Cut after a tensor the file is well formed, but the model lacks the others.
        let ggml = try WhisperGGMLFile(path: WhisperLayouts.ggml.path)
        let cut = directory.file("ggml-cut.bin")
        try Data(ggml.mapping.bytes[..<ggml.tensors[0].bytes.upperBound]).write(to: cut)
        #expect(message(cut).contains("tensor encoder.conv1.weight is missing"))
    }
}

/// The Levenshtein distance between two word lists.
func editDistance(_ a: [String], _ b: [String]) -> Int {
    var previous = Array(0...b.count)
    for (i, x) in a.enumerated() {
        var current = [i + 1]
        for (j, y) in b.enumerated() {
            current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
        }
        previous = current
    }
    return previous[b.count]
}
