import Foundation
import HearthEngine
import HearthCore
import HearthFormats
import HearthTestSupport
import HearthTokenizers
import Testing

/// A model of Tests/Fixtures/rerank with its fixture, loaded once per process.
private final class LoadedCrossEncoder: Sendable {
    let spec: CrossEncoderSpec
    let fixture: CrossEncoderFixture
    let model: CrossEncoderModel
    let weightsSHA256: String

    init(_ spec: CrossEncoderSpec) throws {
        self.spec = spec
        fixture = try CrossEncoderFixture.named(spec.name)
        let folder = try spec.folder()
        weightsSHA256 = folder.weightsSHA256
        model = try CrossEncoderModel(directory: folder.url, threads: 2)
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: LoadedCrossEncoder] = [:]

    static func get(_ spec: CrossEncoderSpec) throws -> LoadedCrossEncoder {
        lock.lock()
        defer { lock.unlock() }
        if let loaded = cache[spec.name] { return loaded }
        let loaded = try LoadedCrossEncoder(spec)
        cache[spec.name] = loaded
        return loaded
    }
}

@Suite("Cross-encoders against sentence-transformers' CrossEncoder")
struct CrossEncoderTests {
    @Test("the weights are the script's, and the folder is read as CrossEncoder reads it", arguments: CrossEncoderSpec.all)
    func folderSettings(_ spec: CrossEncoderSpec) throws {
        let loaded = try LoadedCrossEncoder.get(spec)
        // Checked first: a drifted generator, not the arithmetic, would fail everything below.
        try #require(loaded.weightsSHA256 == loaded.fixture.weights_sha256,
                     "CrossEncoderModels.swift no longer writes the weights of scripts/make-rerank-fixtures.py")
        #expect(loaded.model.tokenizer.maximumLength == loaded.fixture.max_length)
        #expect(loaded.model.labels == loaded.fixture.labels)
        #expect(loaded.model.activation.rawValue == loaded.fixture.activation.lowercased())
        #expect(loaded.model.encoder.labelCount == spec.labels.count)
    }

    @Test("token ids, logits and scores equal CrossEncoder's (1e-4), long pairs cut as it cuts them", arguments: CrossEncoderSpec.all)
    func scoresMatch(_ spec: CrossEncoderSpec) throws {
        let loaded = try LoadedCrossEncoder.get(spec)
        try #require(loaded.weightsSHA256 == loaded.fixture.weights_sha256)
        let pairs = loaded.fixture.pairs
        var truncated = 0
        for pair in pairs {
            let encoded = loaded.model.tokenize(query: pair.query, document: pair.document)
            #expect(encoded.ids == pair.ids, "\(pair)")
            #expect(encoded.typeIds == pair.type_ids, "\(pair)")
            if pair.ids.count == loaded.fixture.max_length { truncated += 1 }
        }
        #expect(truncated >= 2, "the fixture should hold pairs that are cut")
        let logits = try loaded.model.logits(pairs.map { ($0.query, $0.document) })
        let scores = try loaded.model.scores(pairs.map { ($0.query, $0.document) })
        for (index, pair) in pairs.enumerated() {
            #expect(logits[index].count == spec.labels.count)
            for label in 0..<spec.labels.count {
                #expect(abs(logits[index][label] - pair.logits[label]) <= 1e-4, "\(pair) label \(label): \(logits[index][label]) vs \(pair.logits[label])")
                #expect(abs(scores[index][label] - pair.scores[label]) <= 1e-4, "\(pair) label \(label): \(scores[index][label]) vs \(pair.scores[label])")
            }
        }
    }

    @Test("a pair scores the same, to the bit, alone or in any batch", arguments: [CrossEncoderSpec.tiny, .miniLM])
    func batchInvariance(_ spec: CrossEncoderSpec) throws {
        let loaded = try LoadedCrossEncoder.get(spec)
        let pairs = loaded.fixture.pairs.map { (query: $0.query, document: $0.document) }
        let together = try loaded.model.logits(pairs)
        for (index, pair) in pairs.enumerated() {
            #expect(try loaded.model.logits([pair]) == [together[index]], "pair \(index)")
        }
        // Reversed, and repeated past one pass's token budget so that the pairs are split
        // across several passes at other places.
        #expect(try loaded.model.logits(pairs.reversed()) == together.reversed())
        let tokens = pairs.reduce(0) { $0 + loaded.model.tokenize(query: $1.query, document: $1.document).ids.count }
        let copies = CrossEncoderModel.tokensPerPass / tokens + 2
        let many = Array(repeating: pairs, count: copies).flatMap { $0 }
        #expect(try loaded.model.logits(many) == Array(repeating: together, count: copies).flatMap { $0 })
    }

    @Test("longest_first keeps what Hugging Face tokenizers keeps")
    func longestFirst() {
        // (first, second, limit) → kept, worked through tokenizers' truncate_encodings.
        let cases: [(Int, Int, Int, Int, Int)] = [
            (0, 0, 7, 0, 0), (0, 8, 7, 0, 7), (2, 8, 7, 2, 5), (4, 4, 7, 3, 4), (4, 8, 7, 3, 4), (8, 2, 7, 5, 2),
            (8, 4, 7, 4, 3), (8, 8, 7, 3, 4), (2, 2, 7, 2, 2), (100, 3, 10, 7, 3), (3, 100, 10, 3, 7), (30, 40, 45, 22, 23),
            (60, 90, 45, 22, 23), (90, 60, 45, 23, 22), (5, 5, 0, 0, 0), (12, 20, 30, 12, 18),
        ]
        for (first, second, limit, keepFirst, keepSecond) in cases {
            let kept = WordPieceTokenizer.longestFirst(first, second, limit: limit)
            #expect(kept == (keepFirst, keepSecond), "(\(first), \(second)) within \(limit) kept \(kept)")
        }
    }

    @Test("without tokenizer.json, vocab.txt and tokenizer_config.json give the same tokens", arguments: [CrossEncoderSpec.tiny, .miniLM])
    func vocabularyFile(_ spec: CrossEncoderSpec) throws {
        let loaded = try LoadedCrossEncoder.get(spec)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-ce-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: try spec.folder().url, to: directory)
        try FileManager.default.removeItem(at: directory.appendingPathComponent("tokenizer.json"))
        let model = try CrossEncoderModel(directory: directory, threads: 1)
        #expect(model.tokenizer.maximumLength == loaded.fixture.max_length)
        for pair in loaded.fixture.pairs {
            let encoded = model.tokenize(query: pair.query, document: pair.document)
            #expect(encoded.ids == pair.ids && encoded.typeIds == pair.type_ids, "\(pair)")
        }
    }

    @Test("truncation_side left keeps the ends of the texts")
    func leftTruncation() throws {
        let loaded = try LoadedCrossEncoder.get(.tiny)
        let tokenizer = loaded.model.tokenizer
        let query = "one two three four five six seven eight nine ten eleven twelve"
        let document = String(repeating: "alpha beta gamma delta ", count: 20) + "omega"
        let right = tokenizer.encodePair(query, document, side: .right)
        let left = tokenizer.encodePair(query, document, side: .left)
        #expect(right.ids.count == 48 && left.ids.count == 48)
        #expect(left.ids[left.ids.count - 2] == tokenizer.pieces(of: "omega").last)
        #expect(right.ids[1] == tokenizer.pieces(of: "one").first)
        #expect(left.ids.prefix(2) == [tokenizer.classifierToken, tokenizer.pieces(of: "one").first!])
        #expect(left.typeIds == right.typeIds)
    }

    @Test("folders that are not BERT cross-encoders are refused by name")
    func refusals() throws {
        let good = try CrossEncoderSpec.tiny.folder().url
        func variant(_ edit: (URL) throws -> Void) throws -> URL {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-ce-\(UUID().uuidString)")
            try FileManager.default.copyItem(at: good, to: directory)
            try edit(directory)
            return directory
        }
        func config(_ url: URL, _ replace: (String) -> String) throws {
            let file = url.appendingPathComponent("config.json")
            try Data(replace(try String(contentsOf: file, encoding: .utf8)).utf8).write(to: file)
        }
        func message(_ url: URL) -> String {
            defer { try? FileManager.default.removeItem(at: url) }
            do {
                _ = try CrossEncoderModel(directory: url, threads: 1)
                return "loaded"
            } catch let error as HearthError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        let masked = try variant { try config($0) { $0.replacingOccurrences(of: "BertForSequenceClassification", with: "BertForMaskedLM") } }
        let maskedMessage = message(masked)
        #expect(maskedMessage.contains("BertForMaskedLM") && maskedMessage.contains("BertForSequenceClassification"), "\(maskedMessage)")
        let roberta = try variant {
            try config($0) { $0.replacingOccurrences(of: "BertForSequenceClassification", with: "XLMRobertaForSequenceClassification") }
        }
        #expect(message(roberta).contains("XLMRobertaForSequenceClassification"))
        let softmax = try variant {
            try Data("{\"activation_fn\": \"torch.nn.modules.activation.Softmax\"}".utf8)
                .write(to: $0.appendingPathComponent("config_sentence_transformers.json"))
        }
        #expect(message(softmax).contains("torch.nn.modules.activation.Softmax"))
        let dense = try variant {
            try Data("""
                [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
                 {"idx": 1, "name": "1", "path": "1_Dense", "type": "sentence_transformers.base.modules.dense.Dense"}]
                """.utf8).write(to: $0.appendingPathComponent("modules.json"))
        }
        #expect(message(dense).contains("sentence_transformers.base.modules.dense.Dense"))
        let twoLabels = try variant { try config($0) { $0.replacingOccurrences(of: "\"0\": \"LABEL_0\"", with: "\"0\": \"a\", \"1\": \"b\"") } }
        #expect(message(twoLabels).contains("classifier.weight"), "the classifier has 1 row, the config 2 labels")
        let noHead = try variant { url in
            let file = try SafetensorsFile(contentsOf: url.appendingPathComponent("model.safetensors"))
            var tensors: [String: SafetensorsWriter.Tensor] = [:]
            for tensor in file.tensors where !tensor.name.hasPrefix("classifier") {
                tensors[tensor.name] = .init(shape: tensor.shape, values: try file.floats(tensor))
            }
            try SafetensorsWriter.write(tensors, to: url.appendingPathComponent("model.safetensors"))
        }
        #expect(message(noHead).contains("classifier.weight is missing"))

        // The activation CrossEncoder would pick from each place it looks, first to last.
        func activation(config extra: String?, stConfig: String?) throws -> CrossEncoderModel.Activation {
            let url = try variant { url in
                if let extra { try config(url) { $0.replacingOccurrences(of: "\"model_type\"", with: extra + ", \"model_type\"") } }
                if let stConfig { try Data(stConfig.utf8).write(to: url.appendingPathComponent("config_sentence_transformers.json")) }
            }
            defer { try? FileManager.default.removeItem(at: url) }
            return try CrossEncoderModel(directory: url, threads: 1).activation
        }
        #expect(try activation(config: nil, stConfig: nil) == .sigmoid)
        #expect(try activation(config: "\"sentence_transformers\": {\"activation_fn\": \"torch.nn.modules.activation.Tanh\"}", stConfig: nil) == .tanh)
        #expect(try activation(config: "\"sbert_ce_default_activation_function\": \"torch.nn.modules.linear.Identity\"",
                               stConfig: "{\"activation_fn\": \"torch.nn.modules.activation.Sigmoid\"}") == .sigmoid)
        #expect(try activation(config: "\"sbert_ce_default_activation_function\": \"torch.nn.modules.linear.Identity\"", stConfig: nil) == .identity)
        // A class outside torch is passed over, as CrossEncoder does without trust_remote_code.
        #expect(try activation(config: nil, stConfig: "{\"activation_fn\": \"mypackage.Scale\"}") == .sigmoid)
    }
}
